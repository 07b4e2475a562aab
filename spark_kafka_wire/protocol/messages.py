"""Layouts of the Kafka APIs we speak, as data (facts from Kafka's message specs).

Each field lists the versions in which it exists; the engine compiles one codec per version.
``max_version`` is the highest version we implement and test, which is also what we offer in
ApiVersions negotiation.
"""

from __future__ import annotations

from typing import Any

from spark_kafka_wire.protocol import bodies as b
from spark_kafka_wire.protocol.engine import NULL_UUID, ApiSpec, Field
from spark_kafka_wire.protocol.primitives import INT32_MAX

F = Field

# ---- ApiVersions (18) ----------------------------------------------------------------------
API_VERSIONS: ApiSpec[b.ApiVersionsRequest, b.ApiVersionsResponse] = ApiSpec(
    key=18, name="ApiVersions", min_version=0, max_version=3, flexible_from=3,
    request=(
        F("client_software_name", "string", "3+", default="spark-kafka-wire"),
        F("client_software_version", "string", "3+", default="0"),
    ),
    response=(
        F("error_code", "int16"),
        F("api_keys", "[]", fields=(
            F("api_key", "int16"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        )),
        F("throttle_time_ms", "int32", "1+"),
        F("supported_features", "[]", "3+", tag=0, tagged="3+", fields=(
            F("name", "string"),
            F("min_version", "int16"),
            F("max_version", "int16"),
        )),
        F("finalized_features_epoch", "int64", "3+", default=-1, tag=1, tagged="3+"),
        F("finalized_features", "[]", "3+", tag=2, tagged="3+", fields=(
            F("name", "string"),
            F("max_version_level", "int16"),
            F("min_version_level", "int16"),
        )),
        F("zk_migration_ready", "bool", "3+", tag=3, tagged="3+"),
    ),
)

# ---- Metadata (3) --------------------------------------------------------------------------
METADATA: ApiSpec[b.MetadataRequest, b.MetadataResponse] = ApiSpec(
    key=3, name="Metadata", min_version=0, max_version=12, flexible_from=9,
    request=(
        F("topics", "[]", nullable="1+", fields=(
            F("topic_id", "uuid", "10+", default=NULL_UUID),  # zero: the topic is named
            F("name", "string", nullable="10+"),
        )),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        # not asked unless said (kafkawire never asks: it learns ACLs from the errors)
        F("include_cluster_authorized_operations", "bool", "8-10", default=False),
        F("include_topic_authorized_operations", "bool", "8+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+"),
        F("brokers", "[]", fields=(
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "1+", nullable="1+", default=None),
        )),
        F("cluster_id", "string", "2+", nullable="2+", default=None),
        F("controller_id", "int32", "1+", default=-1),
        F("topics", "[]", fields=(
            F("error_code", "int16"),
            F("name", "string", nullable="12+"),
            F("topic_id", "uuid", "10+"),
            F("is_internal", "bool", "1+"),
            F("partitions", "[]", fields=(
                F("error_code", "int16"),
                F("partition_index", "int32"),
                F("leader_id", "int32"),
                F("leader_epoch", "int32", "7+", default=-1),
                F("replica_nodes", "[]int32"),
                F("isr_nodes", "[]int32"),
                F("offline_replicas", "[]int32", "5+"),
            )),
            F("topic_authorized_operations", "int32", "8+", default=-(1 << 31)),
        )),
        F("cluster_authorized_operations", "int32", "8-10", default=-(1 << 31)),
    ),
)

# ---- ListOffsets (2) -----------------------------------------------------------------------
LIST_OFFSETS: ApiSpec[b.ListOffsetsRequest, b.ListOffsetsResponse] = ApiSpec(
    key=2, name="ListOffsets", min_version=0, max_version=7, flexible_from=6,
    request=(
        F("replica_id", "int32", default=-1),
        F("isolation_level", "int8", "2+"),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("current_leader_epoch", "int32", "4+", default=-1),
                F("timestamp", "int64"),
                F("max_num_offsets", "int32", "0", default=1),
            )),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            )),
        )),
    ),
)

# ---- Fetch (1) -----------------------------------------------------------------------------
FETCH: ApiSpec[b.FetchRequest, b.FetchResponse] = ApiSpec(
    key=1, name="Fetch", min_version=0, max_version=11, flexible_from=12,
    request=(
        F("replica_id", "int32", default=-1),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", "3+", default=INT32_MAX),
        F("isolation_level", "int8", "4+"),
        # kafkawire uses no fetch sessions (KIP-227): session 0 at epoch -1 is a full fetch,
        # with nothing to forget.
        F("session_id", "int32", "7+", default=0),
        F("session_epoch", "int32", "7+", default=-1),
        F("topics", "[]", fields=(
            F("topic", "string"),
            F("partitions", "[]", fields=(
                F("partition", "int32"),
                F("current_leader_epoch", "int32", "9+", default=-1),
                F("fetch_offset", "int64"),
                F("log_start_offset", "int64", "5+", default=-1),
                F("partition_max_bytes", "int32"),
            )),
        )),
        F("forgotten_topics_data", "[]", "7+", default=(), fields=(
            F("topic", "string"),
            F("partitions", "[]int32"),
        )),
        F("rack_id", "string", "11+", default=""),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "7+"),
        F("session_id", "int32", "7+"),
        F("responses", "[]", fields=(
            F("topic", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("error_code", "int16"),
                F("high_watermark", "int64"),
                F("last_stable_offset", "int64", "4+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("aborted_transactions", "[]", "4+", nullable="4+", fields=(
                    F("producer_id", "int64"),
                    F("first_offset", "int64"),
                )),
                F("preferred_read_replica", "int32", "11+", default=-1),
                F("records", "records", nullable="0+"),
            )),
        )),
    ),
)

# ---- Produce (0) ---------------------------------------------------------------------------
# v9 is flexible, v10 adds KIP-951's leader hints as tagged fields (decoded, not used: a moved
# leader is found through Metadata), v11 the TRANSACTION_ABORTABLE error, v12 nothing to the layout: it
# means the transaction protocol v2 (see TRANSACTION_V2_FROM); v13 names topics by id.
PRODUCE: ApiSpec[b.ProduceRequest, b.ProduceResponse] = ApiSpec(
    key=0, name="Produce", min_version=0, max_version=12, flexible_from=9,
    request=(
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16"),
        F("timeout_ms", "int32"),
        F("topic_data", "[]", fields=(
            F("name", "string"),
            F("partition_data", "[]", fields=(
                F("index", "int32"),
                F("records", "records", nullable="0+"),
            )),
        )),
    ),
    response=(
        F("responses", "[]", fields=(
            F("name", "string"),
            F("partition_responses", "[]", fields=(
                F("index", "int32"),
                F("error_code", "int16"),
                F("base_offset", "int64"),
                F("log_append_time_ms", "int64", "2+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("record_errors", "[]", "8+", fields=(
                    F("batch_index", "int32"),
                    F("batch_index_error_message", "string", nullable="8+", default=None),
                )),
                F("error_message", "string", "8+", nullable="8+", default=None),
                F("current_leader", "struct", "10+", tag=0, tagged="10+", fields=(
                    F("leader_id", "int32", "10+", default=-1),
                    F("leader_epoch", "int32", "10+", default=-1),
                )),
            )),
        )),
        F("throttle_time_ms", "int32", "1+"),
        F("node_endpoints", "[]", "10+", tag=0, tagged="10+", fields=(
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="10+", default=None),
        )),
    ),
)

# ---- CreateTopics (19) ---------------------------------------------------------------------
CREATE_TOPICS: ApiSpec[b.CreateTopicsRequest, b.CreateTopicsResponse] = ApiSpec(
    key=19, name="CreateTopics", min_version=0, max_version=7, flexible_from=5,
    request=(
        F("topics", "[]", fields=(
            F("name", "string"),
            F("num_partitions", "int32", default=-1),
            F("replication_factor", "int16", default=-1),
            F("assignments", "[]", fields=(
                F("partition_index", "int32"),
                F("broker_ids", "[]int32"),
            )),
            F("configs", "[]", fields=(
                F("name", "string"),
                F("value", "string", nullable="0+", default=None),
            )),
        )),
        F("timeout_ms", "int32", default=30000),
        F("validate_only", "bool", "1+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("topic_id", "uuid", "7+"),
            F("error_code", "int16"),
            F("error_message", "string", "1+", nullable="0+", default=None),
            F("topic_config_error_code", "int16", "5+", tag=0, tagged="5+"),
            F("num_partitions", "int32", "5+", default=-1),
            F("replication_factor", "int16", "5+", default=-1),
            F("configs", "[]", "5+", nullable="5+", fields=(
                F("name", "string"),
                F("value", "string", nullable="5+", default=None),
                F("read_only", "bool"),
                F("config_source", "int8", default=-1),
                F("is_sensitive", "bool"),
            )),
        )),
    ),
)

# ---- OffsetCommit (8) ----------------------------------------------------------------------
# v0 commits to ZooKeeper on 0.8.1 brokers, v1+ to Kafka; v8 is the first flexible version.
OFFSET_COMMIT: ApiSpec[b.OffsetCommitRequest, b.OffsetCommitResponse] = ApiSpec(
    key=8, name="OffsetCommit", min_version=0, max_version=9, flexible_from=8,
    request=(
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1),
        F("member_id", "string", "1+", default=""),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        F("retention_time_ms", "int64", "2-4", default=-1),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "6+", default=-1),
                F("commit_timestamp", "int64", "1", default=-1),
                F("committed_metadata", "string", nullable="0+", default=""),
            )),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32", "3+"),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("error_code", "int16"),
            )),
        )),
    ),
)

# ---- OffsetFetch (9) -----------------------------------------------------------------------
# v8 moves everything under a Groups[] array (several groups per request).
OFFSET_FETCH: ApiSpec[b.OffsetFetchRequest, b.OffsetFetchResponse] = ApiSpec(
    key=9, name="OffsetFetch", min_version=0, max_version=9, flexible_from=6,
    request=(
        F("group_id", "string", "0-7"),
        F("topics", "[]", "0-7", nullable="2-7", fields=(
            F("name", "string"),
            F("partition_indexes", "[]int32"),
        )),
        F("groups", "[]", "8+", fields=(
            F("group_id", "string"),
            F("member_id", "string", "9+", nullable="9+", default=None),
            F("member_epoch", "int32", "9+", default=-1),
            F("topics", "[]", nullable="8+", fields=(
                F("name", "string"),
                F("partition_indexes", "[]int32"),
            )),
        )),
        F("require_stable", "bool", "7+", default=False),  # KIP-447: not waiting for open txns
    ),
    response=(
        F("throttle_time_ms", "int32", "3+"),
        F("topics", "[]", "0-7", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "5-7", default=-1),
                F("metadata", "string", nullable="0-7", default=""),
                F("error_code", "int16"),
            )),
        )),
        F("error_code", "int16", "2-7"),
        F("groups", "[]", "8+", fields=(
            F("group_id", "string"),
            F("topics", "[]", fields=(
                F("name", "string"),
                F("partitions", "[]", fields=(
                    F("partition_index", "int32"),
                    F("committed_offset", "int64"),
                    F("committed_leader_epoch", "int32", default=-1),
                    F("metadata", "string", nullable="8+", default=""),
                    F("error_code", "int16"),
                )),
            )),
            F("error_code", "int16"),
        )),
    ),
)

# ---- FindCoordinator (10) ------------------------------------------------------------------
# v4 replaces the single key with CoordinatorKeys[] and answers Coordinators[].
FIND_COORDINATOR: ApiSpec[b.FindCoordinatorRequest, b.FindCoordinatorResponse] = ApiSpec(
    key=10, name="FindCoordinator", min_version=0, max_version=6, flexible_from=3,
    request=(
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+"),
        F("coordinator_keys", "[]string", "4+"),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3", default=None),
        F("node_id", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
        F("coordinators", "[]", "4+", fields=(
            F("key", "string"),
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="4+", default=None),
        )),
    ),
)

# ---- InitProducerId (22) -------------------------------------------------------------------
INIT_PRODUCER_ID: ApiSpec[b.InitProducerIdRequest, b.InitProducerIdResponse] = ApiSpec(
    key=22, name="InitProducerId", min_version=0, max_version=5, flexible_from=2,
    request=(
        F("transactional_id", "string", nullable="0+", default=None),
        F("transaction_timeout_ms", "int32", default=60_000),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
    ),
)

# ---- SaslHandshake (17) and SaslAuthenticate (36) ------------------------------------------
# v0 of SaslHandshake is followed by raw (unframed) tokens; v1 by SaslAuthenticate requests.
SASL_HANDSHAKE: ApiSpec[b.SaslHandshakeRequest, b.SaslHandshakeResponse] = ApiSpec(
    key=17, name="SaslHandshake", min_version=0, max_version=1, flexible_from=None,
    request=(F("mechanism", "string"),),
    response=(
        F("error_code", "int16"),
        F("mechanisms", "[]string"),
    ),
)

SASL_AUTHENTICATE: ApiSpec[b.SaslAuthenticateRequest, b.SaslAuthenticateResponse] = ApiSpec(
    key=36, name="SaslAuthenticate", min_version=0, max_version=2, flexible_from=2,
    request=(F("auth_bytes", "bytes"),),
    response=(
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F("auth_bytes", "bytes"),
        F("session_lifetime_ms", "int64", "1+"),
    ),
)

# ---- Transactions (KIP-98): AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
# TxnOffsetCommit (28). Clients use AddPartitionsToTxn up to v3 (v4+ batch several
# transactions, for brokers). EndTxn v5 bumps the epoch on every end and answers the new
# producer id and epoch (KIP-890 part 2); see TRANSACTION_V2_FROM for when it is sent.
ADD_PARTITIONS_TO_TXN: ApiSpec[b.AddPartitionsToTxnRequest, b.AddPartitionsToTxnResponse] = ApiSpec(
    key=24, name="AddPartitionsToTxn", min_version=0, max_version=3, flexible_from=3,
    request=(  # Kafka's names: v4+ moved these fields under a Transactions[] array
        F("v3_and_below_transactional_id", "string"),
        F("v3_and_below_producer_id", "int64"),
        F("v3_and_below_producer_epoch", "int16"),
        F("v3_and_below_topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]int32"),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("results_by_topic_v3_and_below", "[]", fields=(
            F("name", "string"),
            F("results_by_partition", "[]", fields=(
                F("partition_index", "int32"),
                F("partition_error_code", "int16"),
            )),
        )),
    ),
)

ADD_OFFSETS_TO_TXN: ApiSpec[b.AddOffsetsToTxnRequest, b.AddOffsetsToTxnResponse] = ApiSpec(
    key=25, name="AddOffsetsToTxn", min_version=0, max_version=3, flexible_from=3,
    request=(
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("group_id", "string"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
    ),
)

END_TXN: ApiSpec[b.EndTxnRequest, b.EndTxnResponse] = ApiSpec(
    key=26, name="EndTxn", min_version=0, max_version=5, flexible_from=3,
    request=(
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", "5+", default=-1),
        F("producer_epoch", "int16", "5+", default=-1),
    ),
)

# v4 adds the TRANSACTION_ABORTABLE error, v5 nothing to the layout: it means the transaction
# protocol v2, where the offsets join the transaction without AddOffsetsToTxn.
TXN_OFFSET_COMMIT: ApiSpec[b.TxnOffsetCommitRequest, b.TxnOffsetCommitResponse] = ApiSpec(
    key=28, name="TxnOffsetCommit", min_version=0, max_version=5, flexible_from=3,
    request=(
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+", default=""),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("committed_offset", "int64"),
                F("committed_leader_epoch", "int32", "2+", default=-1),
                F("committed_metadata", "string", nullable="0+", default=""),
            )),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("error_code", "int16"),
            )),
        )),
    ),
)

#: The transaction protocol v2 (KIP-890 part 2; Kafka 4.0+, feature ``transaction.version``
#: level 2): the first version of each request that means it. A Kafka 4 coordinator or leader
#: applies the v2 rules to these versions and up and the classic (KIP-98) rules below them,
#: whatever level the cluster finalized; a client may use them only where the level is 2+.
#: Under v2, Produce adds a partition to the transaction itself (no AddPartitionsToTxn),
#: TxnOffsetCommit adds the group (no AddOffsetsToTxn), and EndTxn bumps the epoch.
TRANSACTION_V2_FROM: dict[int, int] = {PRODUCE.key: 12, END_TXN.key: 5, TXN_OFFSET_COMMIT.key: 5}
#: The highest version of each of those requests kafkawire sends outside the v2 protocol: in a
#: classic transaction, and (Produce) outside any transaction. Produce v9-v11 bring only what
#: kafkawire does not use (flexible encoding, leader hints, TRANSACTION_ABORTABLE).
CLASSIC_MAX_VERSION: dict[int, int] = {PRODUCE.key: 8, END_TXN.key: 4, TXN_OFFSET_COMMIT.key: 3}
#: The finalized feature (ApiVersions v3+, KIP-584) whose level says which transaction
#: protocol the cluster runs, and the level of v2.
TRANSACTION_VERSION_FEATURE = "transaction.version"
TRANSACTION_V2_LEVEL = 2

ALL_APIS: dict[int, ApiSpec[Any, Any]] = {
    spec.key: spec
    for spec in (
        API_VERSIONS, METADATA, LIST_OFFSETS, FETCH, PRODUCE, CREATE_TOPICS, OFFSET_COMMIT,
        OFFSET_FETCH, FIND_COORDINATOR, INIT_PRODUCER_ID, SASL_HANDSHAKE, SASL_AUTHENTICATE,
        ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT,
    )
}

# ---- DeleteTopics (20) and DeleteRecords (21) ----------------------------------------------
# Administration used by tests of data loss (a topic deleted, or records deleted below a new
# log start offset, between planning a read and reading it). DeleteTopics v6 names topics in a
# struct that may carry a topic id instead; v0-5 send a list of names.
DELETE_TOPICS: ApiSpec[b.DeleteTopicsRequest, b.DeleteTopicsResponse] = ApiSpec(
    key=20, name="DeleteTopics", min_version=0, max_version=6, flexible_from=4,
    request=(
        F("topics", "[]", "6+", fields=(
            F("name", "string", "6+", nullable="6+", default=None),
            F("topic_id", "uuid", "6+", default=NULL_UUID),  # zero: the topic is named
        )),
        F("topic_names", "[]string", "0-5"),
        F("timeout_ms", "int32", default=30_000),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("responses", "[]", fields=(
            F("name", "string", nullable="6+"),
            F("topic_id", "uuid", "6+"),
            F("error_code", "int16"),
            F("error_message", "string", "5+", nullable="5+", default=None),
        )),
    ),
)

DELETE_RECORDS: ApiSpec[b.DeleteRecordsRequest, b.DeleteRecordsResponse] = ApiSpec(
    key=21, name="DeleteRecords", min_version=0, max_version=2, flexible_from=2,
    request=(
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("offset", "int64"),  # -1: up to the high watermark
            )),
        )),
        F("timeout_ms", "int32", default=30_000),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("topics", "[]", fields=(
            F("name", "string"),
            F("partitions", "[]", fields=(
                F("partition_index", "int32"),
                F("low_watermark", "int64"),
                F("error_code", "int16"),
            )),
        )),
    ),
)

# ---- CreatePartitions (37) -----------------------------------------------------------------
# More partitions for existing topics (client/metadata/admin.py create_partitions), sent to the
# controller; v3 is v2 that may answer THROTTLING_QUOTA_EXCEEDED (KIP-599). ``assignments``
# null: the controller places the new partitions.
CREATE_PARTITIONS: ApiSpec[b.CreatePartitionsRequest, b.CreatePartitionsResponse] = ApiSpec(
    key=37, name="CreatePartitions", min_version=0, max_version=3, flexible_from=2,
    request=(
        F("topics", "[]", fields=(
            F("name", "string"),
            F("count", "int32"),
            F("assignments", "[]", nullable="0+", default=None, fields=(
                F("broker_ids", "[]int32"),
            )),
        )),
        F("timeout_ms", "int32", default=30_000),
        F("validate_only", "bool"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=(
            F("name", "string"),
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
        )),
    ),
)

# ---- DescribeConfigs (32) ------------------------------------------------------------------
# A topic's configs for ``kafkawire describe`` (client/metadata/admin.py describe_configs). v0 says
# whether a value is the default (``is_default``); v1+ says where it comes from
# (``config_source``, CONFIG_SOURCES) and lists synonyms on request; v3+ adds the config's type
# and documentation on request; v4 is flexible. Kafka 4.0 answers v1+ only. Any broker answers
# for a topic.
DESCRIBE_CONFIGS: ApiSpec[b.DescribeConfigsRequest, b.DescribeConfigsResponse] = ApiSpec(
    key=32, name="DescribeConfigs", min_version=0, max_version=4, flexible_from=4,
    request=(
        F("resources", "[]", fields=(
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configuration_keys", "[]string", nullable="0+", default=None),  # null: all
        )),
        F("include_synonyms", "bool", "1+", default=False),
        F("include_documentation", "bool", "3+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=(
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", "[]", fields=(
                F("name", "string"),
                F("value", "string", nullable="0+", default=None),
                F("read_only", "bool"),
                F("is_default", "bool", "0"),
                F("config_source", "int8", "1+", default=-1),
                F("is_sensitive", "bool"),
                F("synonyms", "[]", "1+", default=[], fields=(
                    F("name", "string"),
                    F("value", "string", nullable="0+", default=None),
                    F("source", "int8"),
                )),
                F("config_type", "int8", "3+", default=0),
                F("documentation", "string", "3+", nullable="0+", default=None),
            )),
        )),
    ),
)

#: DescribeConfigs' resource type of a topic (Kafka's ConfigResource.Type.TOPIC)
TOPIC_RESOURCE = 2
#: DescribeConfigs v1+ ``config_source``: where a config's value comes from (Kafka's
#: DescribeConfigsResponse.ConfigSource); v0 answers only whether it is the default.
CONFIG_SOURCES = {0: "unknown", 1: "topic", 2: "broker", 3: "cluster default", 4: "static broker",
                  5: "default", 6: "broker logger", 7: "client metrics", 8: "group"}
DEFAULT_CONFIG_SOURCE = 5

# ---- ListGroups (16) -----------------------------------------------------------------------
# Every group a broker coordinates (``kafkawire groups``: client/groups/listing.py asks every broker).
# v3 is flexible; v4 filters by state and answers each group's state (KIP-518); v5 filters by
# type and answers it (classic, consumer, share: KIP-848).
LIST_GROUPS: ApiSpec[b.ListGroupsRequest, b.ListGroupsResponse] = ApiSpec(
    key=16, name="ListGroups", min_version=0, max_version=5, flexible_from=3,
    request=(
        F("states_filter", "[]string", "4+", default=[]),
        F("types_filter", "[]string", "5+", default=[]),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("groups", "[]", fields=(
            F("group_id", "string"),
            F("protocol_type", "string"),
            F("group_state", "string", "4+", default=""),
            F("group_type", "string", "5+", default=""),
        )),
    ),
)

# ---- DescribeGroups (15) -------------------------------------------------------------------
# A classic group's state, protocol and members, at its coordinator. A member's metadata and
# assignment are the embedding protocol's bytes (for consumers: client/groups/listing.py reads them as
# Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment); both are filled only while
# the group is Stable. v3 answers authorized operations on request; v4 static members'
# group.instance.id (KIP-345); v5 is flexible; v6 an error message (KIP-1043).
DESCRIBE_GROUPS: ApiSpec[b.DescribeGroupsRequest, b.DescribeGroupsResponse] = ApiSpec(
    key=15, name="DescribeGroups", min_version=0, max_version=6, flexible_from=5,
    request=(
        F("groups", "[]string"),
        F("include_authorized_operations", "bool", "3+", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("groups", "[]", fields=(
            F("error_code", "int16"),
            F("error_message", "string", "6+", nullable="6+", default=None),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            F("members", "[]", fields=(
                F("member_id", "string"),
                F("group_instance_id", "string", "4+", nullable="4+", default=None),
                F("client_id", "string"),
                F("client_host", "string"),
                F("member_metadata", "bytes"),
                F("member_assignment", "bytes"),
            )),
            F("authorized_operations", "int32", "3+", default=-2147483648),
        )),
    ),
)

# ---- ConsumerGroupDescribe (69) ------------------------------------------------------------
# A group of the consumer protocol (KIP-848, Kafka 4.0+: group.protocol=consumer), which
# DescribeGroups does not describe (it answers GROUP_ID_NOT_FOUND, "not a classic group"): its
# state, epochs and members, each with its assignment by topic id and name (no embedded bytes).
# v1 says each member's type (KIP-1099: -1 unknown, 0 classic, 1 consumer). kafka-python, the
# layout oracle of tests/unit/protocol/test_messages_oracle.py, lacks this API: Kafka 4.1's
# own answers are the oracle (tests/cli/test_cli_kafka_tools.py describes a KIP-848 group as
# kafka-consumer-groups describes it), and tests/unit/protocol/test_consumer_group_describe.py
# round-trips every version.
_ASSIGNMENT = (
    F("topic_partitions", "[]", fields=(
        F("topic_id", "uuid"),
        F("topic_name", "string"),
        F("partitions", "[]int32"),
    )),
)
CONSUMER_GROUP_DESCRIBE: ApiSpec[b.ConsumerGroupDescribeRequest,
                                 b.ConsumerGroupDescribeResponse] = ApiSpec(
    key=69, name="ConsumerGroupDescribe", min_version=0, max_version=1, flexible_from=0,
    request=(
        F("group_ids", "[]string"),
        F("include_authorized_operations", "bool", default=False),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("groups", "[]", fields=(
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+", default=None),
            F("group_id", "string"),
            F("group_state", "string"),
            F("group_epoch", "int32"),
            F("assignment_epoch", "int32"),
            F("assignor_name", "string"),
            F("members", "[]", fields=(
                F("member_id", "string"),
                F("instance_id", "string", nullable="0+", default=None),
                F("rack_id", "string", nullable="0+", default=None),
                F("member_epoch", "int32"),
                F("client_id", "string"),
                F("client_host", "string"),
                F("subscribed_topic_names", "[]string"),
                F("subscribed_topic_regex", "string", nullable="0+", default=None),
                F("assignment", "struct", fields=_ASSIGNMENT),
                F("target_assignment", "struct", fields=_ASSIGNMENT),
                F("member_type", "int8", "1+", default=-1),
            )),
            F("authorized_operations", "int32", default=-2147483648),
        )),
    ),
)

# ---- DeleteGroups (42) ---------------------------------------------------------------------
# Deletes empty groups and their committed offsets, at each group's coordinator (Kafka 1.1+).
DELETE_GROUPS: ApiSpec[b.DeleteGroupsRequest, b.DeleteGroupsResponse] = ApiSpec(
    key=42, name="DeleteGroups", min_version=0, max_version=2, flexible_from=2,
    request=(
        F("groups_names", "[]string"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("results", "[]", fields=(
            F("group_id", "string"),
            F("error_code", "int16"),
        )),
    ),
)

# ---- DescribeTransactions (65) -------------------------------------------------------------
# A transactional id's state at its transaction coordinator (KIP-664, Kafka 3.0+): Ongoing with
# the partitions written so far and when it began, or Empty / CompleteCommit / CompleteAbort.
DESCRIBE_TRANSACTIONS: ApiSpec[b.DescribeTransactionsRequest,
                               b.DescribeTransactionsResponse] = ApiSpec(
    key=65, name="DescribeTransactions", min_version=0, max_version=0, flexible_from=0,
    request=(
        F("transactional_ids", "[]string"),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("transaction_states", "[]", fields=(
            F("error_code", "int16"),
            F("transactional_id", "string"),
            F("transaction_state", "string"),
            F("transaction_timeout_ms", "int32"),
            F("transaction_start_time_ms", "int64"),
            F("producer_id", "int64"),
            F("producer_epoch", "int16"),
            F("topics", "[]", fields=(
                F("topic", "string"),
                F("partitions", "[]int32"),
            )),
        )),
    ),
)

# ---- ListTransactions (66) -----------------------------------------------------------------
# The transactional ids a broker coordinates (KIP-664, Kafka 3.0+); v1 filters by how long a
# transaction has run (KIP-994), v2 by a regular expression on the id (KIP-1152).
LIST_TRANSACTIONS: ApiSpec[b.ListTransactionsRequest, b.ListTransactionsResponse] = ApiSpec(
    key=66, name="ListTransactions", min_version=0, max_version=2, flexible_from=0,
    request=(
        F("state_filters", "[]string", default=[]),
        F("producer_id_filters", "[]int64", default=[]),
        F("duration_filter", "int64", "1+", default=-1),
        F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("unknown_state_filters", "[]string"),
        F("transaction_states", "[]", fields=(
            F("transactional_id", "string"),
            F("producer_id", "int64"),
            F("transaction_state", "string"),
        )),
    ),
)

ALL_APIS.update({spec.key: spec for spec in (DELETE_TOPICS, DELETE_RECORDS, CREATE_PARTITIONS,
                                             DESCRIBE_CONFIGS, LIST_GROUPS, DESCRIBE_GROUPS,
                                             DELETE_GROUPS, DESCRIBE_TRANSACTIONS,
                                             LIST_TRANSACTIONS)})

# ---- JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13) ----------------------
# A classic group's membership (``kafkawire consume --group``, client/groups/group_member.py): join
# and learn the members (the leader) or nothing (the others), hand out the leader's
# assignment and receive one's own, stay alive, leave. JoinGroup v4+ answers a first join with
# MEMBER_ID_REQUIRED and the member id to join with (KIP-394); v5+ and SyncGroup/Heartbeat
# v3+ carry static members' group.instance.id (KIP-345, never set by kafkawire); JoinGroup v7+
# and SyncGroup v5+ repeat the protocol type and name; LeaveGroup v3+ leaves as a list of
# members; v8/v5 add a reason.
JOIN_GROUP: ApiSpec[b.JoinGroupRequest, b.JoinGroupResponse] = ApiSpec(
    key=11, name="JoinGroup", min_version=0, max_version=9, flexible_from=6,
    request=(
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1),
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string"),
        F("protocols", "[]", fields=(
            F("name", "string"),
            F("metadata", "bytes"),
        )),
        F("reason", "string", "8+", nullable="8+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32", "2+"),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None),
        F("protocol_name", "string", nullable="7+"),
        F("leader", "string"),
        F("skip_assignment", "bool", "9+", default=False),
        F("member_id", "string"),
        F("members", "[]", fields=(
            F("member_id", "string"),
            F("group_instance_id", "string", "5+", nullable="5+", default=None),
            F("metadata", "bytes"),
        )),
    ),
)

SYNC_GROUP: ApiSpec[b.SyncGroupRequest, b.SyncGroupResponse] = ApiSpec(
    key=14, name="SyncGroup", min_version=0, max_version=5, flexible_from=4,
    request=(
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("protocol_type", "string", "5+", nullable="5+", default=None),
        F("protocol_name", "string", "5+", nullable="5+", default=None),
        F("assignments", "[]", fields=(
            F("member_id", "string"),
            F("assignment", "bytes"),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("protocol_type", "string", "5+", nullable="5+", default=None),
        F("protocol_name", "string", "5+", nullable="5+", default=None),
        F("assignment", "bytes"),
    ),
)

HEARTBEAT: ApiSpec[b.HeartbeatRequest, b.HeartbeatResponse] = ApiSpec(
    key=12, name="Heartbeat", min_version=0, max_version=4, flexible_from=4,
    request=(
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
    ),
)

LEAVE_GROUP: ApiSpec[b.LeaveGroupRequest, b.LeaveGroupResponse] = ApiSpec(
    key=13, name="LeaveGroup", min_version=0, max_version=5, flexible_from=4,
    request=(
        F("group_id", "string"),
        F("member_id", "string", "0-2"),
        F("members", "[]", "3+", fields=(
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="3+", default=None),
            F("reason", "string", "5+", nullable="5+", default=None),
        )),
    ),
    response=(
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("members", "[]", "3+", fields=(
            F("member_id", "string"),
            F("group_instance_id", "string", nullable="3+"),
            F("error_code", "int16"),
        )),
    ),
)

ALL_APIS.update({spec.key: spec for spec in (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP,
                                            CONSUMER_GROUP_DESCRIBE)})

# KIP-219 (Kafka 2.0): from these versions on a broker answers a quota-throttled request at
# once, with ``throttle_time_ms``, and expects the client to send nothing more on that
# connection before the time has passed (Java's AbstractResponse.shouldClientThrottle:
# Produce v6+, Fetch v8+); before them the broker delayed its answer itself.
CLIENT_THROTTLES_FROM: dict[int, int] = {PRODUCE.key: 6, FETCH.key: 8}
