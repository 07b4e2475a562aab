"""Streaming reads, Spark's ``kafka`` format beside ``kafkawire``: the same topic read as a
stream by both, micro-batch by micro-batch.

Spark plans a Kafka micro-batch from offsets alone (the start, the latest offsets, the read
limit), so with the same data and the same options both formats must plan the same batches:
each test runs one query per format (one at a time, the oracle first) and compares, per batch
id, the rows a foreachBatch sink collected and the batch's progress (start, end and latest
offsets, numInputRows).

Deliberate differences, asserted as such:

- kafkawire's end offsets may carry keys of its own beside the topics (``@start``, where a
  batch began when Spark would ask again; ``@tasks``, the task count its ranges were packed
  for: spark_kafka_wire/source/offsets_json.py); the topics' offsets are Spark's.
- Spark's connector reports ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
  ``avgOffsetsBehindLatest`` in each progress's source metrics (ReportsSourceMetrics); a Python
  data source cannot: Spark's PythonMicroBatchStream implements no ReportsSourceMetrics and its
  Python runner has no call for metrics (pyspark 4.2 and 4.3), so kafkawire's source metrics
  are empty. The offsets behind latest follow from the progress's latestOffset and endOffset,
  which kafkawire reports as Spark does (checked below).
- A checkpoint written by kafkawire cannot be resumed by Spark's ``kafka`` format while its last
  batches carry those ``@`` keys; Spark's checkpoints resume under kafkawire
  (test_switching_formats_on_a_checkpoint).
- A subscription matching no partition yet: Spark runs no batch, kafkawire an empty one
  (test_pattern_matching_no_topic_yet).
- Trigger.AvailableNow with minOffsetsPerTrigger: Spark's connector ends the run at a batch it
  holds back, leaving the records after it unread until the next run; kafkawire reads
  everything that was available when the run started
  (test_min_offsets_per_trigger_with_available_now).
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.metadata.admin import create_partitions, create_topics, delete_records
from tests.parity.both import FORMATS, fail_both

#: The source metrics of Spark's connector that a Python data source cannot report.
SPARK_METRICS = ("avgOffsetsBehindLatest", "maxOffsetsBehindLatest", "minOffsetsBehindLatest")
#: Record timestamps: partition p's record i has BASE_TS + 1000 * i + p.
BASE_TS = 1_700_000_000_000
#: Uneven partitions of the shared topic: Spark's proportional split and its rounding (a
#: share below one offset rounded up, larger ones down) all show.
UNEVEN = (37, 11, 2)
COLUMNS = ("topic", "partition", "offset", "key", "value", "timestamp", "timestampType")


# -- helpers -----------------------------------------------------------------------------------
def produce(bootstrap: str, topic: str, counts: dict[int, tuple[int, int]]) -> None:
    """``counts``: partition -> (first index, how many); record i of partition p has key
    ``k<p>-<i>``, value ``v<p>-<i>`` and timestamp BASE_TS + 1000 * i + p."""
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                            "linger.ms": 50})
    for p, (first, n) in counts.items():
        for i in range(first, first + n):
            producer.produce(topic, key=f"k{p}-{i}".encode(), value=f"v{p}-{i}".encode(),
                             partition=p, timestamp=BASE_TS + 1000 * i + p)
    assert producer.flush(20) == 0


def topic_with(client: Any, bootstrap: str, partitions: int, prefix: str,
               counts: dict[int, tuple[int, int]]) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    create_topics(client, [(name, partitions)])
    produce(bootstrap, name, counts)
    return name


@dataclass
class Run:
    """What one streaming query of one format did: rows per batch id, and its progress."""

    fmt: str
    batches: dict[int, list[tuple]] = field(default_factory=dict)
    progress: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def collect(self, df: Any, batch_id: int) -> None:
        rows = sorted(tuple(r) for r in df.select(*COLUMNS).collect())
        with self.lock:
            self.batches[batch_id] = rows

    @property
    def data_progress(self) -> list[dict]:
        """The progress of the batches that ran (not the idle triggers'), by batch id."""
        seen: dict[int, dict] = {}
        for p in self.progress:
            if p["batchId"] in self.batches:
                seen[p["batchId"]] = p
        return [seen[b] for b in sorted(seen)]

    def sizes(self) -> list[int]:
        return [len(self.batches[b]) for b in sorted(self.batches)]

    def rows(self) -> list[tuple]:
        return sorted(r for b in self.batches.values() for r in b)


def stream(spark: Any, fmt: str, bootstrap: str, **options: str) -> Any:
    return (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
            .options(**options).load())


def available_now(spark: Any, fmt: str, bootstrap: str, checkpoint: str, trigger: str,
                  **options: str) -> Run:
    """A query of ``fmt`` to a foreachBatch sink with ``trigger`` (availableNow or once) run
    to its end."""
    run = Run(fmt)
    q = (stream(spark, fmt, bootstrap, **options).writeStream.foreachBatch(run.collect)
         .option("checkpointLocation", checkpoint).trigger(**{trigger: True}).start())
    try:
        q.awaitTermination(120)
        assert not q.isActive, f"{fmt}: the {trigger} query did not finish"
        assert q.exception() is None, q.exception()
    finally:
        q.stop()
    run.progress = [json.loads(p.json) for p in q.recentProgress]
    return run


def both_available_now(spark: Any, bootstrap: str, tmp: Any, trigger: str = "availableNow",
                       **options: str) -> tuple[Run, Run]:
    """(Spark's run, kafkawire's run): the same availableNow (or ``trigger``) query, each
    format with its own checkpoint under ``tmp``, the same for every call of a test."""
    runs = [available_now(spark, fmt, bootstrap, str(tmp / fmt), trigger, **options)
            for fmt in FORMATS]
    return runs[0], runs[1]


def topics_only(offsets: Any) -> Any:
    """A progress offset (JSON text) as a dict of its topics; kafkawire's own ``@`` keys
    (offsets_json.py) left out. None stays None."""
    if offsets is None:
        return None
    doc = json.loads(offsets) if isinstance(offsets, str) else offsets
    return {k: v for k, v in doc.items() if not k.startswith("@")}


def own_keys(offsets: Any) -> set[str]:
    doc = json.loads(offsets) if isinstance(offsets, str) else (offsets or {})
    return {k for k in doc if k.startswith("@")}


def assert_same_batches(oracle: Run, wire: Run, *, latest: bool = True) -> None:
    """Both runs planned the same micro-batches: batch ids, rows per batch, and each batch's
    start/end offsets, numInputRows and (``latest``) latestOffset in its progress."""
    assert sorted(wire.batches) == sorted(oracle.batches), (oracle.sizes(), wire.sizes())
    for b in sorted(oracle.batches):
        assert wire.batches[b] == oracle.batches[b], f"batch {b} differs"
    sp, wp = oracle.data_progress, wire.data_progress
    assert [p["batchId"] for p in wp] == [p["batchId"] for p in sp]
    for s, w in zip(sp, wp, strict=True):
        [ss], [ws] = s["sources"], w["sources"]
        assert w["numInputRows"] == s["numInputRows"] == len(oracle.batches[s["batchId"]])
        assert ws["numInputRows"] == ss["numInputRows"]
        for key in ("startOffset", "endOffset") + (("latestOffset",) if latest else ()):
            assert topics_only(ws[key]) == topics_only(ss[key]), (s["batchId"], key, ss, ws)
        # Spark's offsets are topics only; kafkawire's may record its own keys beside them
        assert own_keys(ss["endOffset"]) == set()
        assert own_keys(ws["endOffset"]) <= {"@start", "@tasks"}


def expected_rows(topic: str, counts: dict[int, tuple[int, int]]) -> list[tuple]:
    from datetime import datetime, timezone

    return sorted(
        (topic, p, i, f"k{p}-{i}".encode(), f"v{p}-{i}".encode(),
         datetime.fromtimestamp((BASE_TS + 1000 * i + p) / 1000, timezone.utc)
         .replace(tzinfo=None), 0)
        for p, (first, n) in counts.items() for i in range(first, first + n))


def as_plain(rows: list[tuple]) -> list[tuple]:
    """Rows with bytearrays as bytes and datetimes naive (the session's time zone is UTC)."""
    return [tuple(bytes(x) if isinstance(x, bytearray) else x for x in r) for r in rows]


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def uneven(client, bootstrap) -> str:
    """3 partitions holding 37, 11 and 2 records; read, never written, by the tests that share
    it."""
    return topic_with(client, bootstrap, 3, "ps-uneven",
                      {p: (0, n) for p, n in enumerate(UNEVEN)})


@pytest.fixture(autouse=True)
def _utc(spark) -> Iterator[None]:
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    yield


# -- maxOffsetsPerTrigger, availableNow, progress ----------------------------------------------
@pytest.mark.parametrize("trigger", ["availableNow", "once"])
def test_one_batch_of_everything(spark, bootstrap, uneven, tmp_path, trigger):
    """Trigger.AvailableNow without maxOffsetsPerTrigger plans one batch of everything; so does
    the deprecated Trigger.Once, which ignores maxOffsetsPerTrigger (Spark hands the source
    ReadAllAvailable)."""
    options = {"subscribe": uneven, "startingOffsets": "earliest"}
    if trigger == "once":
        options["maxOffsetsPerTrigger"] = "13"
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, trigger, **options)
    assert_same_batches(oracle, wire)
    assert oracle.sizes() == [sum(UNEVEN)]
    assert as_plain(wire.rows()) == expected_rows(uneven, {p: (0, n) for p, n in enumerate(UNEVEN)})


def test_max_offsets_per_trigger_batches_and_progress(spark, bootstrap, uneven, tmp_path):
    """Trigger.AvailableNow from earliest with maxOffsetsPerTrigger=13: Spark's proportional
    split over 37/11/2 records (shares below one rounded up, others down), the same batches
    with the same rows in both formats.

    The progress of each batch: startOffset, endOffset and latestOffset of the same shape
    ({"topic": {"0": n}}, kafkawire's own ``@`` keys aside) and values, numInputRows equal.
    Spark's connector adds the offsets behind latest as source metrics; kafkawire's are empty
    (a Python data source has no way to report them: see the module docstring), and Spark's
    values are what the progress's latestOffset and endOffset give."""
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, subscribe=uneven,
                                      startingOffsets="earliest", maxOffsetsPerTrigger="13")
    assert_same_batches(oracle, wire)
    assert as_plain(wire.rows()) == expected_rows(uneven, {p: (0, n) for p, n in enumerate(UNEVEN)})
    assert len(oracle.sizes()) > sum(UNEVEN) // 13
    first = oracle.data_progress[0]["sources"][0]
    assert first["startOffset"] is None  # the first batch of a query: no start in progress
    # 13*37/50 = 9.62 -> 9, 13*11/50 = 2.86 -> 2, 13*2/50 = 0.52 -> 1
    assert topics_only(first["endOffset"]) == {uneven: {"0": 9, "1": 2, "2": 1}}
    assert topics_only(first["latestOffset"]) == {uneven: {"0": 37, "1": 11, "2": 2}}
    for s, w in zip(oracle.data_progress, wire.data_progress, strict=True):
        [ss], [ws] = s["sources"], w["sources"]
        latest, end = topics_only(ss["latestOffset"])[uneven], topics_only(ss["endOffset"])[uneven]
        behind = [latest[p] - end[p] for p in sorted(latest)]
        assert set(ss["metrics"]) == set(SPARK_METRICS)
        assert int(ss["metrics"]["maxOffsetsBehindLatest"]) == max(behind)
        assert int(ss["metrics"]["minOffsetsBehindLatest"]) == min(behind)
        # (Spark shows the average rounded to one decimal)
        assert float(ss["metrics"]["avgOffsetsBehindLatest"]) == pytest.approx(
            sum(behind) / len(behind), abs=0.05)
        # deliberate: PythonMicroBatchStream carries no source metrics
        assert not ws.get("metrics")


def test_processing_time_trigger_with_max_offsets_per_trigger(spark, bootstrap, client,
                                                              tmp_path):
    """A running query (processing-time trigger, processAllAvailable) with maxOffsetsPerTrigger
    catches up in the same batches in both formats, and so again after more records arrive
    while it runs (one partition's records, produced in one request)."""
    runs = []
    for fmt in FORMATS:
        topic = topic_with(client, bootstrap, 2, f"ps-pt-{fmt}", {0: (0, 9), 1: (0, 3)})
        run = Run(fmt)
        q = (stream(spark, fmt, bootstrap, subscribe=topic, startingOffsets="earliest",
                    maxOffsetsPerTrigger="5")
             .writeStream.foreachBatch(run.collect)
             .option("checkpointLocation", str(tmp_path / fmt))
             .trigger(processingTime="100 milliseconds").start())
        try:
            q.processAllAvailable()
            caught_up = sorted(run.batches)
            produce(bootstrap, topic, {1: (3, 7)})
            q.processAllAvailable()
            assert q.exception() is None
        finally:
            q.stop()
        run.progress = [json.loads(p.json) for p in q.recentProgress]
        assert as_plain(run.rows()) == expected_rows(topic, {0: (0, 9), 1: (0, 10)})
        runs.append((topic, run, caught_up))
    (stopic, oracle, s_caught), (wtopic, wire, w_caught) = runs
    assert s_caught == w_caught
    assert sorted(wire.batches) == sorted(oracle.batches)
    # per batch: the same offsets of the same partitions (the topics' names differ)
    assert {b: [r[1:] for r in rows] for b, rows in wire.batches.items()} == \
        {b: [r[1:] for r in rows] for b, rows in oracle.batches.items()}
    # 5*9/12 = 3.75 -> 3 and 5*3/12 = 1.25 -> 1, then 5*6/8 -> 3 and 5*2/8 -> 1, then 3 + 1
    assert s_caught == [0, 1, 2] and oracle.sizes()[:3] == [4, 4, 4]


# -- startingOffsets and startingTimestamp ------------------------------------------------------
def _starts(topic: str) -> dict[str, dict[str, str]]:
    return {
        "earliest": {"startingOffsets": "earliest"},
        "json": {"startingOffsets": json.dumps({topic: {"0": 30, "1": -2, "2": -1}})},
        "json-per-partition": {"startingOffsets": json.dumps({topic: {"0": 5, "1": 10, "2": 1}})},
        # partition 0: records from index 20 on; 1: index 8 on (its timestamps are + 1 ms);
        # 2: none match (latest)
        "timestamp": {"startingTimestamp": str(BASE_TS + 1000 * 8 + 1)},
        "timestamp-by-partition": {"startingOffsetsByTimestamp": json.dumps(
            {topic: {"0": BASE_TS + 1000 * 20, "1": BASE_TS + 1000 * 10 + 1, "2": BASE_TS}})},
    }


@pytest.mark.parametrize("start", ["earliest", "json", "json-per-partition", "timestamp",
                                   "timestamp-by-partition"])
def test_starting_offsets(spark, bootstrap, uneven, tmp_path, start):
    """Streams starting at earliest, at JSON offsets (-2 earliest, -1 latest) and at
    timestamps (one for all partitions, or one per partition; no record at or after the
    timestamp: latest, with startingOffsetsByTimestampStrategy=latest) read the same batches."""
    options = {"subscribe": uneven, **_starts(uneven)[start]}
    if "timestamp" in start:
        options["startingOffsetsByTimestampStrategy"] = "latest"
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(oracle, wire)
    firsts = {p: min(r[2] for r in oracle.rows() if r[1] == p) for p in {r[1] for r in oracle.rows()}}
    assert firsts == {"earliest": {0: 0, 1: 0, 2: 0}, "json": {0: 30, 1: 0},
                      "json-per-partition": {0: 5, 1: 10, 2: 1}, "timestamp": {0: 9, 1: 8},
                      "timestamp-by-partition": {0: 20, 1: 10, 2: 0}}[start]


def test_starting_timestamp_without_a_match_fails(spark, bootstrap, uneven, tmp_path):
    """A startingTimestamp after every record, with the default
    startingOffsetsByTimestampStrategy (error): both formats fail the query, saying which
    partition and timestamp matched no offset."""
    late = BASE_TS + 10**9

    def run(fmt: str) -> None:
        available_now(spark, fmt, bootstrap, str(tmp_path / fmt), "availableNow",
                      subscribe=uneven, startingTimestamp=str(late),
                      **{"fetchOffset.retryIntervalMs": "10"})

    for error in fail_both(run):
        assert re.search(rf"(?i)no offset matched from request of topic-partition {uneven}-\d "
                         rf"and timestamp {late}", str(error)), str(error)[:2000]


def test_starting_offsets_latest_and_restart(spark, bootstrap, client, tmp_path):
    """startingOffsets=latest (the stream default) and restarts from a checkpoint. A first
    availableNow run finds no new record (an empty first batch); records arrive; a second run on the same
    checkpoint reads them in the same batches (Spark's connector wrote its initial offsets to
    the checkpoint on the first run); more records arrive and a third run reads exactly those,
    batch ids continuing."""
    topic = topic_with(client, bootstrap, 2, "ps-latest", {0: (0, 6), 1: (0, 3)})
    options = {"subscribe": topic, "maxOffsetsPerTrigger": "4"}
    first = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*first)
    # a query's first batch runs even when empty (Spark has no offsets to compare with yet)
    assert first[0].batches == {0: []}
    produce(bootstrap, topic, {0: (6, 5), 1: (3, 2)})
    second = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*second)
    assert as_plain(second[0].rows()) == expected_rows(topic, {0: (6, 5), 1: (3, 2)})
    produce(bootstrap, topic, {0: (11, 3), 1: (5, 4)})
    third = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*third)
    assert as_plain(third[0].rows()) == expected_rows(topic, {0: (11, 3), 1: (5, 4)})
    assert min(third[0].batches) == max(second[0].batches) + 1


def test_restart_from_checkpoint(spark, bootstrap, client, tmp_path):
    """Run from earliest with maxOffsetsPerTrigger, stop, add records, run again from the same
    checkpoint directory (each format its own; startingOffsets now latest, which a restarted
    query ignores): the second run's batches are equal and read exactly the new records."""
    topic = topic_with(client, bootstrap, 2, "ps-restart", {0: (0, 9), 1: (0, 2)})
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "5"}
    first = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*first)
    assert as_plain(first[1].rows()) == expected_rows(topic, {0: (0, 9), 1: (0, 2)})
    produce(bootstrap, topic, {0: (9, 2), 1: (2, 7)})
    # the checkpoint wins over startingOffsets, which only a new query uses
    second = both_available_now(spark, bootstrap, tmp_path,
                                **{**options, "startingOffsets": "latest"})
    assert_same_batches(*second)
    assert as_plain(second[1].rows()) == expected_rows(topic, {0: (9, 2), 1: (2, 7)})
    assert min(second[1].batches) == max(first[1].batches) + 1


def test_partitions_added_between_runs(spark, bootstrap, client, tmp_path):
    """Partitions added to the topic (CreatePartitions) while the query is stopped start at
    their earliest offset on restart, and maxOffsetsPerTrigger shares its cap over the old and
    the new partitions alike: same batches in both formats."""
    topic = topic_with(client, bootstrap, 1, "ps-grow", {0: (0, 6)})
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "4"}
    assert_same_batches(*both_available_now(spark, bootstrap, tmp_path, **options))
    create_partitions(client, {topic: 3})
    produce(bootstrap, topic, {0: (6, 2), 1: (0, 5), 2: (0, 1)})
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(oracle, wire)
    assert as_plain(wire.rows()) == expected_rows(topic, {0: (6, 2), 1: (0, 5), 2: (0, 1)})
    # 4*2/8 = 1, 4*5/8 = 2.5 -> 2, 4*1/8 = 0.5 -> 1
    assert topics_only(oracle.data_progress[0]["sources"][0]["endOffset"]) == \
        {topic: {"0": 7, "1": 2, "2": 1}}


def test_pattern_matching_no_topic_yet(spark, bootstrap, client, tmp_path):
    """subscribePattern matching no topic when the query starts (startingOffsets=latest), and a
    topic created before the restart: its records are read from its earliest offset on, the
    same rows in both formats.

    Deliberate difference: Spark's connector answers "no offset" while nothing is subscribed
    and runs no micro-batch; kafkawire's first run has an empty batch 0 with offsets ``{}``,
    so its batch ids are one ahead. A Python data source cannot answer "no offset": Spark's
    PythonMicroBatchStream wraps whatever latestOffset returns into an offset (pyspark 4.2 and
    4.3), and a fresh query runs its first batch whatever that offset is."""
    prefix = f"psnone{uuid.uuid4().hex[:8]}"
    options = {"subscribePattern": f"{prefix}-.*", "startingOffsets": "latest"}
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, **options)
    assert oracle.batches == {} and oracle.data_progress == []
    assert wire.batches == {0: []}
    [ws] = wire.data_progress[0]["sources"]
    assert topics_only(ws["endOffset"]) == {} and topics_only(ws["latestOffset"]) == {}
    topic = f"{prefix}-a"
    create_topics(client, [(topic, 2)])
    produce(bootstrap, topic, {0: (0, 3), 1: (0, 2)})
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, **options)
    assert as_plain(oracle.rows()) == as_plain(wire.rows()) == \
        expected_rows(topic, {0: (0, 3), 1: (0, 2)})
    assert sorted(oracle.batches) == [0] and sorted(wire.batches) == [1]
    assert oracle.batches[0] == wire.batches[1]
    [ss], [ws] = oracle.data_progress[0]["sources"], wire.data_progress[0]["sources"]
    assert topics_only(ws["endOffset"]) == topics_only(ss["endOffset"]) == \
        {topic: {"0": 3, "1": 2}}
    assert ss["startOffset"] is None and topics_only(ws["startOffset"]) == {}


def test_switching_formats_on_a_checkpoint(spark, bootstrap, client, tmp_path):
    """A query moved from Spark's ``kafka`` format to ``kafkawire`` by changing that one string
    resumes from Spark's checkpoint: the offsets are the same JSON, so it reads exactly the
    records that arrived since, in the batches Spark would have planned.

    Deliberate difference: the way back fails. kafkawire's batch ends record keys of their own
    beside the topics (``@start``, ``@tasks``: what makes a replayed batch read and split as
    the first attempt did), and Spark's connector refuses offsets JSON holding anything but
    topics. It works once the checkpoint's last two batches recorded none (kafkawire run with
    maxOffsetRangesPerPartition=1 for two batches or more)."""
    topic = topic_with(client, bootstrap, 2, "ps-switch", {0: (0, 5), 1: (0, 3)})
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "4"}

    def run(fmt: str, checkpoint: str) -> Run:
        return available_now(spark, fmt, bootstrap, str(tmp_path / checkpoint), "availableNow",
                             **options)

    spark_first, wire_first = run("kafka", "from-kafka"), run("kafkawire", "from-kafkawire")
    assert_same_batches(spark_first, wire_first)
    produce(bootstrap, topic, {0: (5, 3), 1: (3, 2)})
    # the oracle: Spark's own second run, on a copy of its first run's checkpoint
    shutil.copytree(tmp_path / "from-kafka", tmp_path / "oracle")
    spark_then = run("kafka", "oracle")
    wire_on_spark = run("kafkawire", "from-kafka")
    assert_same_batches(spark_then, wire_on_spark)
    assert as_plain(wire_on_spark.rows()) == expected_rows(topic, {0: (5, 3), 1: (3, 2)})
    with pytest.raises(Exception, match=r"Expected e\.g\. \{.*got \{.*\"@tasks\""):
        run("kafka", "from-kafkawire")
    # unless kafkawire's last two batches recorded nothing of their own: without packing
    # (maxOffsetRangesPerPartition=1) only a query's first batch, and batches meeting new
    # partitions, do
    options["maxOffsetRangesPerPartition"] = "1"
    unpacked = run("kafkawire", "from-kafkawire")
    assert len(unpacked.batches) >= 2
    assert all(own_keys(p["sources"][0]["endOffset"]) == set() for p in unpacked.data_progress)
    produce(bootstrap, topic, {0: (8, 2), 1: (5, 1)})
    back = run("kafka", "from-kafkawire")
    assert as_plain(back.rows()) == expected_rows(topic, {0: (8, 2), 1: (5, 1)})


# -- minOffsetsPerTrigger / maxTriggerDelay ------------------------------------------------------
def _wait(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _min_offsets_run(spark: Any, fmt: str, bootstrap: str, topic: str, tmp: Any,
                     delay_s: float) -> tuple[Run, list[float]]:
    """A processing-time query with minOffsetsPerTrigger=5 and maxTriggerDelay=``delay_s``:
    3 records at the start (the first trigger is never held back), then 2 (fewer than 5: held
    until the delay passed), then 6 more (enough: the next trigger). The run, and how long
    after its records were produced each of the last two batches came."""
    run = Run(fmt)
    arrived: dict[int, float] = {}

    def collect(df: Any, batch_id: int) -> None:
        run.collect(df, batch_id)
        arrived[batch_id] = time.monotonic()

    q = (stream(spark, fmt, bootstrap, subscribe=topic, startingOffsets="earliest",
                minOffsetsPerTrigger="5", maxTriggerDelay=f"{int(delay_s * 1000)}ms")
         .writeStream.foreachBatch(collect).option("checkpointLocation", str(tmp / fmt))
         .trigger(processingTime="200 milliseconds").start())
    waits = []
    try:
        total = 3
        _wait(lambda: sum(run.sizes()) == total, 60, f"{fmt}: the first {total} records")
        for first, n in ((3, 2), (5, 6)):
            time.sleep(0.3)  # a trigger or two without new data
            produced = time.monotonic()
            produce(bootstrap, topic, {0: (first, n)})
            total += n
            _wait(lambda want=total: sum(run.sizes()) >= want, 60, f"{fmt}: {total} records")
            waits.append(arrived[max(arrived)] - produced)
        assert q.exception() is None
    finally:
        q.stop()
    run.progress = [json.loads(p.json) for p in q.recentProgress]
    return run, waits


def test_min_offsets_per_trigger_and_max_trigger_delay(spark, bootstrap, client, tmp_path):
    """A batch of fewer new records than minOffsetsPerTrigger is held back until
    maxTriggerDelay (2 s) passed since a trigger last went through; one of enough records goes
    at the next trigger. Same batches, same holding back, in both formats.

    The delay is long enough to tell the two apart on a loaded machine: the held batch comes
    about ``delay`` - 0.5 s after its records (the clock runs from the last trigger that went
    through, before they were produced), the prompt one after a trigger and a micro-batch,
    which took Spark's own connector 1.0 s in the parity tier's parallel run, beside a held
    batch of 1.45 s when the delay was 2 s."""
    delay = 4.0
    runs = []
    for fmt in FORMATS:
        topic = topic_with(client, bootstrap, 1, f"ps-min-{fmt}", {0: (0, 3)})
        run, waits = _min_offsets_run(spark, fmt, bootstrap, topic, tmp_path, delay)
        assert run.sizes() == [3, 2, 6], (fmt, run.sizes())
        held, prompt = waits
        assert held >= delay - 0.8, (fmt, waits)  # held back (the clock ran since a trigger)
        assert prompt < held - 0.5, (fmt, waits)  # not held back
        runs.append((topic, run))
    (stopic, oracle), (wtopic, wire) = runs
    assert [[r[2:] for r in rows] for rows in oracle.batches.values()] == \
        [[r[2:] for r in rows] for rows in wire.batches.values()]


@pytest.mark.parametrize("limits", [{"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "13"},
                                    {"minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "25"}])
def test_min_offsets_per_trigger_with_available_now(spark, bootstrap, uneven, tmp_path, limits):
    """Trigger.AvailableNow with minOffsetsPerTrigger and maxOffsetsPerTrigger: the batches of
    enough records are the same in both formats (the first trigger is never held back).

    Deliberate difference: when what is left of the run is fewer records than
    minOffsetsPerTrigger (here 2 after two batches of 24, with the default maxTriggerDelay of
    15 minutes), Spark's connector holds the batch back and Spark ends the availableNow run
    there, leaving those records to the next run; kafkawire reads them in a last batch, as
    availableNow promises (everything available when the run started), which pyspark leaves to
    the source (ReadMinRows' note on Trigger.AvailableNow)."""
    oracle, wire = both_available_now(spark, bootstrap, tmp_path, subscribe=uneven,
                                      startingOffsets="earliest", **limits)
    everything = expected_rows(uneven, {p: (0, n) for p, n in enumerate(UNEVEN)})
    assert as_plain(wire.rows()) == everything
    if limits["minOffsetsPerTrigger"] == "10":
        assert_same_batches(oracle, wire)
        return
    assert oracle.sizes() == [24, 24] and wire.sizes() == [24, 24, 2]
    tail = max(wire.batches)
    left = wire.batches.pop(tail)
    wire.progress = [p for p in wire.progress if p["batchId"] != tail]
    assert_same_batches(oracle, wire)
    assert as_plain(sorted(oracle.rows() + left)) == everything


# -- transactions -------------------------------------------------------------------------------
@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_transactions_in_a_stream(spark, bootstrap, client, tmp_path, isolation):
    """A partition holding a committed transaction (offsets 0-3, its marker 4) and an open one
    (5-7): read_committed streams plan up to the last stable offset (5), read_uncommitted ones
    up to the end (8); maxOffsetsPerTrigger counts offsets, markers included (a batch may hold
    a marker only, or aborted records only, and no row). The open transaction is aborted (marker 8) and a second run on
    the same checkpoints reads on: aborted records only for read_uncommitted. Same batches in
    both formats."""
    topic = f"ps-txn-{uuid.uuid4().hex[:12]}"
    create_topics(client, [(topic, 1)])
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                            "transactional.id": f"ps-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for committed, first in ((True, 0), (False, 5)):
        producer.begin_transaction()
        for i in range(first, first + (4 if committed else 3)):
            producer.produce(topic, key=f"k0-{i}".encode(), value=f"v0-{i}".encode(),
                             partition=0, timestamp=BASE_TS + 1000 * i)
        if committed:
            producer.commit_transaction(30)
        else:
            assert producer.flush(20) == 0
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "3",
               "kafka.isolation.level": isolation}
    try:
        first_run = both_available_now(spark, bootstrap, tmp_path, **options)
    finally:
        producer.abort_transaction(30)
    assert_same_batches(*first_run)
    ends = [topics_only(p["sources"][0]["endOffset"])[topic]["0"]
            for p in first_run[0].data_progress]
    committed_only = isolation == "read_committed"
    assert ends == ([3, 5] if committed_only else [3, 6, 8])
    assert [r[2] for r in first_run[0].rows()] == ([0, 1, 2, 3] if committed_only
                                                   else [0, 1, 2, 3, 5, 6, 7])
    second_run = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*second_run)
    assert second_run[0].rows() == []  # aborted, or read already
    ends = [topics_only(p["sources"][0]["endOffset"])[topic]["0"]
            for p in second_run[0].data_progress]
    assert ends == ([8, 9] if committed_only else [9])  # [8, 9): the abort marker alone


# -- failOnDataLoss -------------------------------------------------------------------------------
@pytest.mark.parametrize("limit", [None, "6"])
def test_records_deleted_between_batches_without_fail_on_data_loss(spark, bootstrap, client,
                                                                  tmp_path, limit):
    """failOnDataLoss=false: records deleted (DeleteRecords, as retention would) between two
    runs of a stream, below where the next batch begins and beyond: the batches read what is
    left, from the new log start on, in both formats. With maxOffsetsPerTrigger=6 the next
    batches are still planned from the checkpoint's offsets (the first one's range of
    partition 0, [10, 14), is wholly deleted: it reads nothing there)."""
    topic = topic_with(client, bootstrap, 2, "ps-loss", {0: (0, 10), 1: (0, 4)})
    options = {"subscribe": topic, "startingOffsets": "earliest", "failOnDataLoss": "false"}
    if limit:
        options["maxOffsetsPerTrigger"] = limit
    first = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*first)
    produce(bootstrap, topic, {0: (10, 10), 1: (4, 3)})
    # partition 0: [10, 15) of the next batch gone; partition 1: nothing gone past its start
    delete_records(client, {(topic, 0): 15, (topic, 1): 2})
    second = both_available_now(spark, bootstrap, tmp_path, **options)
    assert_same_batches(*second)
    assert as_plain(second[0].rows()) == expected_rows(topic, {0: (15, 5), 1: (4, 3)})
    if limit:  # 6*10/13 = 4.6 -> 4 offsets of partition 0 (all deleted), 6*3/13 -> 1 of 1
        first_batch = second[0].batches[min(second[0].batches)]
        assert [(r[1], r[2]) for r in first_batch] == [(1, 4)]


def test_records_deleted_between_batches_fail_the_query(spark, bootstrap, client, tmp_path):
    """failOnDataLoss=true (the default): a batch whose first offsets were deleted between two
    runs fails the query in both formats, the error naming the partition and offset and how to
    skip lost data instead."""
    topic = topic_with(client, bootstrap, 1, "ps-lost", {0: (0, 10)})
    options = {"subscribe": topic, "startingOffsets": "earliest"}
    assert_same_batches(*both_available_now(spark, bootstrap, tmp_path, **options))
    produce(bootstrap, topic, {0: (10, 10)})
    delete_records(client, {(topic, 0): 15})

    def run(fmt: str) -> None:
        available_now(spark, fmt, bootstrap, str(tmp_path / fmt), "availableNow", **options)

    for error in fail_both(run):
        text = str(error)
        assert f"{topic}-0" in text and re.search(r"offset[ =]10\b", text), text[:3000]
        assert "set the source option failOnDataLoss to false" in text
