"""client/operator.py: the operator's settings come from the environment or spark-defaults.conf
(the environment wins), never from anything a query passes."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client import operator
from spark_kafka_wire.client.operator import (
    env_name,
    forget_cached_settings,
    operator_list,
    operator_setting,
    read_spark_defaults,
    spark_defaults_path,
)

SETTING = "spark.kafkawire.sasl.oauthbearer.allowed.urls"


@pytest.fixture
def conf_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv(env_name(SETTING), raising=False)
    forget_cached_settings()
    yield tmp_path
    forget_cached_settings()


def test_env_names() -> None:
    assert env_name(SETTING) == "KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS"
    assert env_name("spark.kafkawire.config.providers") == "KAFKAWIRE_CONFIG_PROVIDERS"


def test_spark_defaults_then_environment(conf_dir, monkeypatch) -> None:
    (conf_dir / "spark-defaults.conf").write_text(
        "spark.master  local[2]\n"
        "# spark.kafkawire.sasl.oauthbearer.allowed.urls  https://commented.example/\n"
        f"{SETTING}   https://idp.example/token, file:///var/run/token\n"
        "spark.kafkawire.config.providers=\n")
    assert operator_list(SETTING) == ["https://idp.example/token", "file:///var/run/token"]
    assert operator_list("spark.kafkawire.config.providers") == []  # empty: none allowed
    assert operator_setting("spark.kafkawire.unset.thing") is None
    assert operator_list("spark.kafkawire.unset.thing") is None
    monkeypatch.setenv(env_name(SETTING), "https://other.example/")
    assert operator_list(SETTING) == ["https://other.example/"]


def test_spark_home_conf_when_no_conf_dir(tmp_path) -> None:
    assert spark_defaults_path({"SPARK_HOME": str(tmp_path)}) == str(
        tmp_path / "conf" / "spark-defaults.conf")
    assert spark_defaults_path({}) is None
    assert read_spark_defaults(str(tmp_path / "missing.conf")) == {}


def test_only_kafkawire_keys_are_read(conf_dir) -> None:
    (conf_dir / "spark-defaults.conf").write_text(
        "spark.authenticate.secret  s3cret\nspark.kafkawire.x  1\n")
    assert read_spark_defaults(str(conf_dir / "spark-defaults.conf")) == {"spark.kafkawire.x": "1"}
    with pytest.raises(ValueError):
        operator.operator_setting("spark.authenticate.secret")
