"""Avro schema -> Spark type as spark-avro's SchemaConverters.toSqlType maps it, and back as
toAvroType derives it (formats/avro_types.py).

Each row's expected type is written as a pyspark DataType (pyspark imported here, never by the
layer), so the JSON form the layer gives must be the one pyspark reads into that type, and
the Arrow type must be the one pyspark's own ``to_arrow_type`` gives for it.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spark_kafka_wire.formats.avro_types import min_bytes_for_precision, to_avro, to_spark


def spark_of(json_value: Any) -> DataType:
    """pyspark's reading of a type's JSON form (as the field of a struct: public API)."""
    return StructType.fromJson({"type": "struct", "fields": [
        {"name": "v", "type": json_value, "nullable": True, "metadata": {}}]}).fields[0].dataType


def s(name: str, t: DataType, nullable: bool = True) -> StructField:
    return StructField(name, t, nullable)


ENUM = {"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS"]}
REC = {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}

# (avro schema, expected Spark type, expected nullable)
ROWS: list[tuple[Any, DataType, bool]] = [
    ("int", IntegerType(), False),
    ("long", LongType(), False),
    ("float", FloatType(), False),
    ("double", DoubleType(), False),
    ("boolean", BooleanType(), False),
    ("string", StringType(), False),
    ("bytes", BinaryType(), False),
    ("null", NullType(), True),
    (ENUM, StringType(), False),
    ({"type": "fixed", "name": "F", "size": 4}, BinaryType(), False),
    ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
     DecimalType(10, 2), False),
    ({"type": "fixed", "name": "D", "size": 5, "logicalType": "decimal", "precision": 11,
      "scale": 0}, DecimalType(11, 0), False),
    # 5 bytes hold 11 digits, not 12 (Avro's maxPrecision): the logical type is dropped
    ({"type": "fixed", "name": "D1", "size": 5, "logicalType": "decimal", "precision": 12,
      "scale": 0}, BinaryType(), False),
    # a fixed too small for its precision: Avro drops the logical type, so Spark sees binary
    ({"type": "fixed", "name": "D2", "size": 2, "logicalType": "decimal", "precision": 10,
      "scale": 0}, BinaryType(), False),
    # an invalid decimal (scale > precision) is plain bytes as well
    ({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}, BinaryType(),
     False),
    ({"type": "int", "logicalType": "date"}, DateType(), False),
    ({"type": "long", "logicalType": "timestamp-millis"}, TimestampType(), False),
    ({"type": "long", "logicalType": "timestamp-micros"}, TimestampType(), False),
    ({"type": "long", "logicalType": "local-timestamp-millis"}, TimestampNTZType(), False),
    ({"type": "long", "logicalType": "local-timestamp-micros"}, TimestampNTZType(), False),
    ({"type": "string", "logicalType": "uuid"}, StringType(), False),
    ({"type": "int", "logicalType": "time-millis"}, IntegerType(), False),
    ({"type": "long", "logicalType": "time-micros"}, LongType(), False),
    ({"type": "array", "items": "int"}, ArrayType(IntegerType(), False), False),
    ({"type": "array", "items": ["null", "int"]}, ArrayType(IntegerType(), True), False),
    ({"type": "map", "values": "long"}, MapType(StringType(), LongType(), False), False),
    ({"type": "map", "values": ["long", "null"]}, MapType(StringType(), LongType(), True),
     False),
    (["null", "string"], StringType(), True),
    (["string", "null"], StringType(), True),
    (["int", "long"], LongType(), False),
    (["long", "int"], LongType(), False),
    (["float", "double"], DoubleType(), False),
    (["null", "int", "long"], LongType(), True),
    (["int"], IntegerType(), False),
    # null alone: Spark drops it and maps the empty union left to a struct without fields
    (["null"], StructType([]), True),
    (["int", "string", REC],
     StructType([s("member0", IntegerType()), s("member1", StringType()),
                 s("member2", StructType([s("x", IntegerType(), False)]))]), False),
    (["null", "int", "string"],
     StructType([s("member0", IntegerType()), s("member1", StringType())]), True),
    ({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"]},
        {"name": "c", "type": REC}]},
     StructType([s("a", IntegerType(), False), s("b", StringType()),
                 s("c", StructType([s("x", IntegerType(), False)]), False)]), False),
]


@pytest.mark.parametrize(("avro", "expected", "nullable"), ROWS,
                         ids=[json.dumps(r[0])[:60] for r in ROWS])
def test_each_mapping_row(avro: Any, expected: DataType, nullable: bool) -> None:
    mapped = to_spark(json.dumps(avro))
    assert spark_of(mapped.spark) == expected
    assert mapped.spark == expected.jsonValue()
    assert mapped.nullable is nullable
    assert mapped.arrow == to_arrow_type(expected, timezone="UTC")


def test_stable_union_ids() -> None:
    """enableStableIdentifiersForUnionType: member_<type name>, named types by simple name."""
    schema = json.dumps(["int", "string", {**REC, "namespace": "a.b"}, ENUM])
    mapped = to_spark(schema, stable_union_ids=True)
    assert spark_of(mapped.spark) == StructType([
        s("member_int", IntegerType()), s("member_string", StringType()),
        s("member_Inner", StructType([s("x", IntegerType(), False)])),
        s("member_Suit", StringType())])
    clash = json.dumps([{"type": "record", "name": "a", "fields": []},
                        {"type": "record", "name": "A", "namespace": "x", "fields": []}])
    with pytest.raises(ValueError, match="name conflict of type name A"):
        to_spark(clash, stable_union_ids=True)


LINKED = json.dumps({"type": "record", "name": "Node", "namespace": "n", "fields": [
    {"name": "value", "type": "int"},
    {"name": "next", "type": ["null", "Node"]}]})


def test_recursive_records_are_refused_by_default() -> None:
    for depth in (-1, 0, 13):
        with pytest.raises(ValueError, match="recursive reference"):
            to_spark(LINKED, recursive_field_max_depth=depth)


def test_recursion_is_cut_at_the_depth_as_spark_does() -> None:
    """Depth 1 drops the recursive field; each more level keeps one more copy."""
    def node(depth: int) -> StructType:
        fields = [s("value", IntegerType(), False)]
        if depth > 1:
            fields.append(s("next", node(depth - 1)))
        return StructType(fields)

    for depth in (1, 2, 3, 12):
        mapped = to_spark(LINKED, recursive_field_max_depth=depth)
        assert spark_of(mapped.spark) == node(depth)
        assert mapped.arrow == to_arrow_type(node(depth), timezone="UTC")


def test_decimal_precision_beyond_sparks_is_refused() -> None:
    with pytest.raises(ValueError, match="precision 39"):
        to_spark(json.dumps({"type": "bytes", "logicalType": "decimal", "precision": 39}))


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown type name"):
        to_spark(json.dumps({"type": "record", "name": "R",
                             "fields": [{"name": "a", "type": "Missing"}]}))


def test_min_bytes_for_precision() -> None:
    """The fewest bytes n with 2^(8n-1) >= 10^p (Spark's minBytesForPrecision): int and long
    boundaries, and a fixed of that size is wide enough to keep the decimal type."""
    spots = {1: 1, 2: 1, 3: 2, 7: 4, 9: 4, 10: 5, 18: 8, 19: 9, 38: 16}
    assert {p: min_bytes_for_precision(p) for p in spots} == spots
    for p in range(1, 39):
        n = min_bytes_for_precision(p)
        assert 2 ** (8 * n - 1) >= 10 ** p > 2 ** (8 * (n - 1) - 1)
        fixed = {"type": "fixed", "name": "F", "size": n, "logicalType": "decimal",
                 "precision": p, "scale": 0}
        assert to_spark(json.dumps(fixed)).spark == f"decimal({p},0)"


def test_spark_type_to_avro_as_to_avro_derives_it() -> None:
    spark = StructType([
        s("b", BooleanType(), False), s("by", ByteType(), False), s("sh", ShortType()),
        s("i", IntegerType(), False), s("l", LongType()), s("f", FloatType(), False),
        s("d", DoubleType(), False), s("s", StringType()), s("bin", BinaryType(), False),
        s("date", DateType()), s("ts", TimestampType(), False),
        s("ntz", TimestampNTZType(), False), s("dec", DecimalType(10, 2)),
        s("arr", ArrayType(StringType(), True), False),
        s("m", MapType(StringType(), LongType(), False), False),
        s("inner", StructType([s("x", IntegerType(), False), s("dd", DecimalType(5, 1), False)])),
    ])
    assert to_avro(spark.jsonValue()) == {
        "type": "record", "name": "topLevelRecord", "fields": [
            {"name": "b", "type": "boolean"},
            {"name": "by", "type": "int"},
            {"name": "sh", "type": ["int", "null"]},
            {"name": "i", "type": "int"},
            {"name": "l", "type": ["long", "null"]},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "double"},
            {"name": "s", "type": ["string", "null"]},
            {"name": "bin", "type": "bytes"},
            {"name": "date", "type": [{"type": "int", "logicalType": "date"}, "null"]},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "ntz", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
            {"name": "dec", "type": [{"type": "fixed", "name": "fixed",
                                      "namespace": "topLevelRecord.dec", "size": 5,
                                      "logicalType": "decimal", "precision": 10, "scale": 2},
                                     "null"]},
            {"name": "arr", "type": {"type": "array", "items": ["string", "null"]}},
            {"name": "m", "type": {"type": "map", "values": "long"}},
            {"name": "inner", "type": [{
                "type": "record", "name": "inner", "namespace": "topLevelRecord", "fields": [
                    {"name": "x", "type": "int"},
                    {"name": "dd", "type": {"type": "fixed", "name": "fixed",
                                            "namespace": "topLevelRecord.inner.dd", "size": 3,
                                            "logicalType": "decimal", "precision": 5,
                                            "scale": 1}}]}, "null"]},
        ]}


def test_to_avro_then_back_gives_the_spark_type() -> None:
    """What to_avro derives maps back to the same Spark type (bytes/short widen to int)."""
    spark = StructType([
        s("i", IntegerType(), False), s("s", StringType()), s("dec", DecimalType(20, 4)),
        s("ts", TimestampType()), s("arr", ArrayType(DateType(), True), False),
        s("m", MapType(StringType(), BinaryType(), True)),
        s("inner", StructType([s("x", LongType(), False)]))])
    back = to_spark(json.dumps(to_avro(spark.jsonValue())))
    assert spark_of(back.spark) == spark


def test_maps_with_other_keys_cannot_be_written() -> None:
    with pytest.raises(ValueError, match="map keys"):
        to_avro(MapType(IntegerType(), StringType()).jsonValue())


def test_arrow_types_are_pyspark_s() -> None:
    mapped = to_spark(json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "a", "type": {"type": "array", "items": "string"}}]}))
    assert mapped.arrow == pa.struct([
        pa.field("t", pa.timestamp("us", tz="UTC"), False),
        pa.field("a", pa.list_(pa.field("element", pa.string(), False)), False)])
