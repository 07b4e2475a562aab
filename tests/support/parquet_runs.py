"""Streaming queries the Spark tests run to Parquet files beside their checkpoint: the memory
sink cannot restart from a checkpoint, Parquet files can, so a second run shows what a restart
reads."""

from __future__ import annotations


def available_now(df, checkpoint: str) -> Exception | None:
    """An availableNow run writing offsets and values to Parquet files next to its checkpoint
    (the memory sink cannot restart from a checkpoint): the query's exception, or None."""
    q = (df.selectExpr("partition", "offset", "cast(value as string) as v").writeStream
         .format("parquet")
         .option("path", f"{checkpoint}-out").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
    except Exception as exc:  # noqa: BLE001 - the failure is what some tests expect
        return exc
    assert not q.isActive, "availableNow query did not finish"
    return None


def written(spark, checkpoint: str) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of every row the runs on ``checkpoint`` wrote."""
    return sorted((r.partition, r.offset, r.v) for r in spark.read
                  .schema("partition int, offset long, v string")
                  .parquet(f"{checkpoint}-out").collect())
