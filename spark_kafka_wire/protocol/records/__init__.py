"""Record data: the records field of Fetch responses decoded into columns, and record batches
encoded from columns for Produce requests.

A fetch response carries records as a run of log entries; Spark wants them as Arrow columns.
Both directions work on whole columns with numpy and Arrow, never a Python object per record.
Bytes come from the network: every length is checked against the bytes it claims before
anything is allocated from it, and any inconsistency raises
:class:`~spark_kafka_wire.protocol.errors.CorruptRecordError` or
:class:`~spark_kafka_wire.protocol.errors.ProtocolError` naming the topic, partition and batch
base offset.

One module per concern, each importing only those listed before it:

- ``varint``: zigzag varints, one at a time or for a whole column of positions;
- ``columns``: :class:`DecodedRecords` and the gathers between byte spans and Arrow columns;
- ``control``: control records; read_committed filtering by the broker's aborted list and by
  the markers themselves;
- ``entries``: what record batches and legacy messages share (offset, length, magic at 16);
- ``batch``: the RecordBatch format (magic 2): header layout, decode, encode;
- ``legacy``: message sets (magic 0 and 1, Kafka before 0.11): decode, encode;
- ``decode``: :func:`decode_record_batches`, for a response that may mix all of them.
"""

from spark_kafka_wire.protocol.limits import DEFAULT_MAX_DECOMPRESSED_SIZE
from spark_kafka_wire.protocol.records.batch import (
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    encode_record_batch,
    next_batch_offset,
    restamp_batch,
)
from spark_kafka_wire.protocol.records.columns import DecodedRecords
from spark_kafka_wire.protocol.records.control import (
    CommittedFilter,
    TransactionCounts,
    TransactionEvents,
)
from spark_kafka_wire.protocol.records.decode import decode_record_batches
from spark_kafka_wire.protocol.records.entries import LOG_OVERHEAD
from spark_kafka_wire.protocol.records.legacy import encode_message_set

__all__ = [
    "ATTR_TRANSACTIONAL",
    "CommittedFilter",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "DecodedRecords",
    "TransactionCounts",
    "TransactionEvents",
    "decode_record_batches",
    "encode_message_set",
    "encode_record_batch",
    "restamp_batch",
    "next_batch_offset",
]
