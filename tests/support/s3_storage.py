"""S3 for a durable Tansu: moto's S3 server on a free loopback port, one bucket per broker.

Tansu's memory storage dies with the process, so a broker the fault tests kill -9 and start
again keeps its log in S3 (``--storage-engine s3://BUCKET/``); moto's server is a real HTTP S3
endpoint in a child process, started in its own session and stopped by its PID. Tansu reads
its S3 settings from the environment (:meth:`S3Server.tansu_environment`). Both mistakes pass
Tansu's start unnoticed (it says "ready" at once and checks nothing): without
``AWS_ALLOW_HTTP`` it never answers a Metadata request, and with a bucket that does not exist
CreateTopics answers UNKNOWN_SERVER_ERROR; so the bucket is made first and the broker counts as
up only once it answers Metadata.

Tansu's S3 storage lists a partition's objects (one per batch) on every Fetch, so the server's
ListObjectsV2 speed bounds a streamed read: moto 5.2 serializes each listed key's timestamp
through dateutil, and a partition of a few thousand batches took 40-60 s per micro-batch
against under a second on moto 5.1 (the kill -9 stream fault test could not drain; measured
on two cores). pyproject.toml keeps moto below 5.2 for this. Tansu also stops listing when
the Fetch's max_wait_ms has passed and then answers with no records below the high watermark:
a 2-page listing (over 1,000 batches) with one slow page on a busy machine is enough, which
is why kafkawire doubles max_wait_ms after such an answer (client/fetching/empty_answers.py, issue 44).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid

from spark_kafka_wire.testing.embedded import free_port
from tests.support.processes import stop_keeping_crash_log, wait_for_port

START_TIMEOUT_S = 30.0  # moto's server imports a lot: 0.4 to 2.5 s measured on two cores
ACCESS_KEY = "test"
REGION = "us-east-1"


def moto_missing() -> str | None:
    """Why moto's server cannot run here (None when it can): the fixtures skip with this."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as exc:
        return f"the fault tests need moto's S3 server: pip install 'moto[server]' ({exc})"
    return None


class S3Server:
    """moto's S3 server on 127.0.0.1:``port``; buckets are made and emptied with boto3."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = os.path.join(tempfile.gettempdir(), f"moto-s3-{self.port}.log")
        self._client = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        try:
            wait_for_port(self.port, self.process, START_TIMEOUT_S, "moto's S3 server",
                          self.log_path)
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server; its log is kept only if it exited on its own (a crash to look at)."""
        proc, self.process = self.process, None
        stop_keeping_crash_log(proc, self.log_path)

    def tansu_environment(self) -> dict[str, str]:
        """What Tansu's S3 storage engine needs to reach this server. NO_PROXY keeps a proxy
        of the machine's environment out of the loopback traffic."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": ACCESS_KEY,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def client(self):
        """A boto3 S3 client of this server (made once)."""
        if self._client is None:
            import boto3

            self._client = boto3.client(
                "s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                aws_secret_access_key=ACCESS_KEY, region_name=REGION)
        return self._client

    def create_bucket(self, name: str | None = None) -> str:
        """Create a bucket (a fresh unique name by default) and return its name."""
        name = name or f"tansu-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name

    def object_count(self, bucket: str) -> int:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sum(page.get("KeyCount", 0) for page in pages)

    def delete_bucket(self, bucket: str) -> None:
        """Delete every object, then the bucket: moto keeps it all in its memory otherwise."""
        s3 = self.client()
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            keys = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})
        s3.delete_bucket(Bucket=bucket)

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
