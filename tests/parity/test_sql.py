"""SQL over Spark's ``kafka`` format and ``kafkawire``: ``CREATE TEMPORARY VIEW ... USING``
each format with the same OPTIONS, then the same SELECT (filters on partition, offset and
timestamp, casts of key and value, aggregates, headers) compared row for row; and what each
does with ``INSERT INTO`` a view and with a catalog table ``USING`` it.

Differences asserted as such: kafkawire's views take ``INSERT INTO`` (rows appended to the
view's ``topic``), where Spark's kafka relation refuses any insertion; and a catalog table
``USING kafkawire`` reaches kafkawire with none of its OPTIONS (Spark keeps no options for
Python data source tables), so only temporary views carry them.
"""

from __future__ import annotations

import json
import uuid

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from tests.parity.both import FORMATS, assert_same_rows, fail_both
from tests.support.write_support import consume

PARTITIONS = 3
RECORDS = 45
BASE_MS = 1_650_000_000_000


def view(spark, name: str, fmt: str, **options: str) -> None:
    given = ", ".join(f"`{k}` '{v}'" for k, v in options.items())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING {fmt} OPTIONS ({given})")


@pytest.fixture(scope="module")
def source(spark, bootstrap, client):
    """A 3-partition topic of 45 records (keys, a null key, a tombstone, headers with repeated
    keys and null values, CreateTimes a second apart) and, per format, the views ``v_<fmt>``
    (the whole topic), ``vh_<fmt>`` (with headers) and ``vo_<fmt>`` (JSON offset ranges)."""
    topic = f"pw-sql-{uuid.uuid4().hex[:10]}"
    create_topics(client, [(topic, PARTITIONS)])
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(RECORDS):
        producer.produce(topic, key=None if i == 7 else f"k{i % 9}".encode(),
                         value=None if i == 11 else f"v{i}".encode(), partition=i % PARTITIONS,
                         timestamp=BASE_MS + i * 1000,
                         headers=[("h", f"{i}".encode()), ("h", None)] if i % 2 else None)
    assert producer.flush(10) == 0
    offsets = (json.dumps({topic: {"0": 2, "1": -2, "2": 5}}),
               json.dumps({topic: {"0": 9, "1": 4, "2": -1}}))
    for fmt in FORMATS:
        common = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
        view(spark, f"v_{fmt}", fmt, **common)
        view(spark, f"vh_{fmt}", fmt, includeHeaders="true", **common)
        view(spark, f"vo_{fmt}", fmt, startingOffsets=offsets[0], endingOffsets=offsets[1],
             **common)
    yield topic
    for fmt in FORMATS:
        for name in ("v", "vh", "vo"):
            spark.catalog.dropTempView(f"{name}_{fmt}")


QUERIES = {
    "everything": "SELECT * FROM v_{fmt}",
    "partition and offsets": "SELECT CAST(key AS STRING) AS k, CAST(value AS STRING) AS v, "
                             "partition, offset FROM v_{fmt} "
                             "WHERE partition = 1 AND offset BETWEEN 2 AND 9",
    "offset above": "SELECT partition, offset, value FROM v_{fmt} WHERE offset > 12",
    "per partition": "SELECT partition, count(*) AS n, min(offset) AS lo, max(offset) AS hi, "
                     "count(key) AS keyed, count(value) AS valued "
                     "FROM v_{fmt} GROUP BY partition",
    "value text": "SELECT topic, partition, offset, CAST(value AS STRING) AS v "
                  "FROM v_{fmt} WHERE CAST(value AS STRING) LIKE 'v1%'",
    "timestamps": "SELECT CAST(value AS STRING) AS v, timestamp, timestampType FROM v_{fmt} "
                  "WHERE timestamp >= TIMESTAMP '2022-04-15 05:20:20' AND partition IN (0, 2)",
    "headers": "SELECT partition, offset, headers, size(headers) AS n FROM vh_{fmt} "
               "WHERE partition = 0 AND offset < 6",
    "null key and value": "SELECT partition, offset, key, value FROM v_{fmt} "
                          "WHERE key IS NULL OR value IS NULL",
    "offset ranges": "SELECT partition, offset, CAST(value AS STRING) AS v FROM vo_{fmt}",
}


@pytest.mark.parametrize("query", list(QUERIES.values()), ids=list(QUERIES))
def test_select_compared_row_for_row(spark, source, query):
    spark_df, wire_df = (spark.sql(query.format(fmt=fmt)) for fmt in FORMATS)
    assert_same_rows(spark_df, wire_df)
    assert wire_df.count() > 0  # every query selects something


def test_insert_into_a_temporary_view(spark, bootstrap, client, source):
    """Spark's kafka relation refuses INSERT; a kafkawire view appends the rows to its
    ``topic`` option, by column name or with every column of the view's schema given."""
    target = f"pw-sql-insert-{uuid.uuid4().hex[:8]}"
    create_topics(client, [(target, 1)])
    for fmt in FORMATS:
        view(spark, f"vi_{fmt}", fmt, **{"kafka.bootstrap.servers": bootstrap,
                                         "subscribe": target, "topic": target})
    try:
        inserts = [
            "INSERT INTO vi_{fmt} (key, value) SELECT CAST('a' AS BINARY), CAST('1' AS BINARY)",
            "INSERT INTO vi_{fmt} BY NAME SELECT CAST('2' AS BINARY) AS value",
            "INSERT INTO vi_{fmt} SELECT CAST('c' AS BINARY), CAST('3' AS BINARY), NULL, NULL, "
            "NULL, NULL, NULL",
        ]
        for insert in inserts:
            with pytest.raises(Exception, match=r"UNSUPPORTED_INSERT.NOT_ALLOWED.*KafkaRelation"):
                spark.sql(insert.format(fmt="kafka"))
            spark.sql(insert.format(fmt="kafkawire"))
        stored = [(r.key, r.value) for r in consume(bootstrap, target, 1, 3)]
        assert stored == [(b"a", b"1"), (None, b"2"), (b"c", b"3")]
        overwrite = fail_both(lambda fmt: spark.sql(
            f"INSERT OVERWRITE vi_{fmt} (key, value) SELECT CAST('d' AS BINARY), "
            "CAST('4' AS BINARY)"))
        assert "UNSUPPORTED_INSERT.NOT_ALLOWED" in str(overwrite[0])
        assert "save mode overwrite is not allowed" in str(overwrite[1])
    finally:
        for fmt in FORMATS:
            spark.catalog.dropTempView(f"vi_{fmt}")


def test_catalog_table_using_each_format(spark, bootstrap, source):
    """CREATE TABLE ... USING kafka keeps its OPTIONS and reads the topic; a table USING
    kafkawire is created, but Spark hands a Python data source none of the table's OPTIONS,
    so reading it fails asking for kafka.bootstrap.servers (use a temporary view)."""
    names = {fmt: f"pw_{fmt}_{uuid.uuid4().hex[:6]}" for fmt in FORMATS}
    try:
        for fmt in FORMATS:
            spark.sql(f"CREATE TABLE {names[fmt]} USING {fmt} OPTIONS "
                      f"(`kafka.bootstrap.servers` '{bootstrap}', subscribe '{source}')")
        assert spark.sql(f"SELECT count(*) AS n FROM {names['kafka']}").first().n == RECORDS
        with pytest.raises(Exception, match=r"MISSING_OPTION\] option 'kafka.bootstrap.servers' "
                                            r"is required.*temporary view"):
            spark.sql(f"SELECT count(*) FROM {names['kafkawire']}").collect()
    finally:
        for name in names.values():
            spark.sql(f"DROP TABLE IF EXISTS {name}")

