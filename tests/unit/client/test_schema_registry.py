"""The Schema Registry client's pure logic (client/registry/schema_registry.py): URLs and the
credentials in them, the configuration's checks and repr, what an error answer shows, how
answers become schemas, and the request bodies. Requests against a real registry are in
tests/integration/test_schema_registry_client.py.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import pickle

import pytest

from spark_kafka_wire.client.errors import ConfigurationError, SchemaRegistryError
from spark_kafka_wire.client.registry.schema_registry import (
    RETRIABLE_STATUSES,
    RegisteredSchema,
    RegistryConfig,
    SchemaReference,
    SchemaRegistryClient,
    explain_answer,
    full_jitter_s,
    kind_of,
    schema_body,
    schema_from_answer,
    shown_url,
    split_url,
)
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.testing.embedded import free_port
from tests.support.errors import raises_condition

SECRET = "s3cr:et@pass/word"
QUOTED = "s3cr%3Aet%40pass%2Fword"


# ------------------------------------------------------------------ URLs


@pytest.mark.parametrize(("url", "clean", "credentials"), [
    ("http://registry:8081", "http://registry:8081", None),
    ("https://registry/apis/ccompat/v7/", "https://registry/apis/ccompat/v7", None),
    ("  HTTP://Registry:8081/  ", "http://Registry:8081", None),
    (f"https://user:{QUOTED}@registry:8081/x", "https://registry:8081/x", f"user:{SECRET}"),
    ("http://u:@h", "http://h", "u:"),
    ("http://[::1]:8081/apis/ccompat/v7", "http://[::1]:8081/apis/ccompat/v7", None),
])
def test_urls_lose_their_user_info_into_credentials(url, clean, credentials):
    assert split_url(url) == (clean, credentials)


@pytest.mark.parametrize(("url", "expected"), [
    ("ftp://registry/x", "http:// or https://"),
    ("file:///etc/passwd", "http:// or https://"),
    ("javascript:alert(1)", "http:// or https://"),
    ("registry:8081", "http:// or https://"),
    ("http://", "a host"),
    ("http://registry:99999", "http:// or https://"),
    ("http://registry:port", "http:// or https://"),
    ("http://registry/?x=1", "without a query"),
    ("http://registry/#frag", "without a query or fragment"),
    ("http://registry/a b", "without spaces"),
    ("http://registry/\r\nX-Injected: 1", "without spaces"),
    ("http://registry/\u00e9", "printable ASCII"),
    ("http://user@registry", "user:password"),
    (f"ftp://user:{SECRET}@registry", "http:// or https://"),
])
def test_other_urls_are_refused_when_the_config_is_built(url, expected):
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "schema.registry.url", expected) as caught:
        RegistryConfig((url,))
    assert SECRET not in str(caught.value) and QUOTED not in str(caught.value)


def test_a_shown_url_has_no_user_info_query_or_control_characters():
    assert shown_url(f"https://u:{QUOTED}@h:1/p?token=x#f") == "https://h:1/p"
    assert shown_url("http://h/\x1b[31m") == "http://h/?[31m"


@pytest.mark.parametrize("password", [
    "AAAA/BBBB", "AAAA#BBBB", "AAAA?BBBB", "AAAA@BBBB", "AA/AA?BB#BB@CCCC", "AAAA,BBBB",
    "/AAAA", "AAAA/", "AAAA:BBBB/CCCC"])
def test_user_info_is_never_shown_whatever_characters_the_password_holds(password):
    """Issue 45 item 3: a password with '/', '#' or '?' (base64 API secrets hold '/') ends
    the URL's authority early for urlsplit, so user info taken from the netloc alone left the
    password in the shown URL, and in the invalid-URL error. Neither the password nor the
    user shows, whether the URL is refused or (with '@') taken."""
    secrets = ("KEYID", "AAAA", "BBBB", "CCCC")
    url = f"https://KEYID:{password}@registry.example.com:8081/apis/ccompat/v7"
    for text in (url, url.replace("https://", ""), f"  HTTP://KEYID:{password}@h/  "):
        shown = shown_url(text)
        assert not any(s in shown for s in secrets), shown
    for urls in ((url,), url):  # a tuple, or the comma-separated string of the option
        try:
            config = RegistryConfig(urls)  # type: ignore[arg-type]
        except ConfigurationError as exc:
            message = str(exc)
            assert "schema.registry.url" in message and "percent-encode" in message, message
        else:
            message = repr(config)
            assert config.urls[-1] == "https://registry.example.com:8081/apis/ccompat/v7"
        assert not any(s in message for s in secrets), message


def test_a_shown_url_keeps_what_helps_and_hides_a_port_that_is_not_one():
    assert shown_url("http://registry:8081/x?y#z") == "http://registry:8081/x"
    assert shown_url("HTTP://[::1]:8081/apis") == "http://[::1]:8081/apis"
    assert shown_url("file:///etc/passwd") == "file:///etc/passwd"
    assert shown_url("registry:8081") == "registry:8081"
    # 'user:password' without a scheme or '@' reads as host:port: a port not a number is
    # hidden, since it may be a password
    assert "s3cret" not in shown_url("https://key:s3cret")
    assert "s3cret" not in shown_url("key:s3cret")


def test_a_comma_separated_string_is_several_urls():
    config = RegistryConfig("http://a:1, http://b:2/")  # type: ignore[arg-type]
    assert config.urls == ("http://a:1", "http://b:2")


def test_no_url_or_an_empty_one_is_refused():
    for urls in ((), ("",), ("http://a", " ")):
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                              "schema.registry.url"):
            RegistryConfig(urls)


# ------------------------------------------------------------------ credentials


def _basic(info: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(info.encode()).decode()}


def test_each_url_authenticates_with_its_own_user_info():
    config = RegistryConfig((f"http://a:{QUOTED}@one", "http://two"))
    assert config.urls == ("http://one", "http://two")
    assert config.authorization(0) == _basic(f"a:{SECRET}")
    assert config.authorization(1) == {}


def test_user_info_and_bearer_tokens_authenticate_every_url():
    basic = RegistryConfig(("http://one", "http://two"), user_info=f"me:{SECRET}")
    assert basic.authorization(0) == basic.authorization(1) == _basic(f"me:{SECRET}")
    bearer = RegistryConfig(("http://one",), bearer_token="tok",
                            bearer_headers=(("target-sr-cluster", "lsrc-1"),))
    assert bearer.authorization(0) == {"Authorization": "Bearer tok",
                                       "target-sr-cluster": "lsrc-1"}


def test_the_repr_shows_no_secret():
    configs = [RegistryConfig((f"https://user:{QUOTED}@h",)),
               RegistryConfig(("https://h",), user_info=f"user:{SECRET}"),
               RegistryConfig(("https://h",), bearer_token=QUOTED,
                              bearer_headers=(("Confluent-Identity-Pool-Id", "pool-1"),),
                              tls=TlsConfig(key=b"KEYBYTES"))]
    for config in configs:
        for shown in (repr(config), str(config), repr(SchemaRegistryClient(config)),
                      repr(config.urls)):
            assert SECRET not in shown and QUOTED not in shown and "user:" not in shown
            assert "KEYBYTES" not in shown
    assert "auth=user info from the URL <hidden>" in repr(configs[0])
    assert "auth=basic.auth.user.info <hidden>" in repr(configs[1])
    assert "auth=bearer token <hidden>" in repr(configs[2]) and "pool-1" in repr(configs[2])


def test_a_config_is_picklable_hashable_and_keeps_its_credentials_when_copied():
    config = RegistryConfig((f"https://user:{QUOTED}@h", "http://b"), max_retries=1)
    again = pickle.loads(pickle.dumps(config))
    assert again == config and hash(again) == hash(config)
    assert again.authorization(0) == _basic(f"user:{SECRET}")
    copied = dataclasses.replace(config, request_timeout_s=5.0)
    assert copied.authorization(0) == _basic(f"user:{SECRET}") and copied.urls == config.urls
    assert copied != config
    assert config != RegistryConfig(("https://h", "http://b"), max_retries=1)


@pytest.mark.parametrize("settings", [
    {"urls": ("http://u:p@h",), "user_info": "a:b"},
    {"urls": ("http://h",), "user_info": "a:b", "bearer_token": "t"},
    {"urls": ("http://u:p@h",), "bearer_token": "t"},
    {"urls": ("http://h",), "bearer_headers": (("target-sr-cluster", "x"),)},
])
def test_credentials_given_twice_or_headers_without_a_token_conflict(settings):
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS"):
        RegistryConfig(**settings)


@pytest.mark.parametrize("settings", [
    {"user_info": "no-colon-secret"},
    {"user_info": ":" + SECRET},
    {"bearer_token": "two words"},
    {"bearer_token": ""},
    {"bearer_token": "t", "bearer_headers": (("Authorization", "Basic x"),)},
    {"bearer_token": "t", "bearer_headers": (("Bad Name", "x"),)},
    {"bearer_token": "t", "bearer_headers": (("target-sr-cluster", "x\r\nInjected: 1"),)},
])
def test_malformed_credentials_and_headers_are_refused_without_showing_them(settings):
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE") as caught:
        RegistryConfig(("http://h",), **settings)
    for secret in (SECRET, "no-colon-secret", "two words", "Basic x", "Injected"):
        assert secret not in str(caught.value)


@pytest.mark.parametrize(("name", "value"), [
    ("request_timeout_s", 0), ("max_response_bytes", 0), ("max_retries", -1),
    ("retries_wait_ms", -5), ("retries_max_wait_ms", -1), ("max_retries", True),
    ("request_timeout_s", "30"),
])
def test_numbers_out_of_range_are_refused(name, value):
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE",
                          name):
        RegistryConfig(("http://h",), **{name: value})


# ------------------------------------------------------------------ answers


def test_an_error_answer_shows_its_code_and_message_only():
    body = json.dumps({"error_code": 40401, "message": "Subject 'x' not found.",
                       "stack": "SECRET-TRACE"}).encode()
    assert explain_answer(404, body) == (40401, "HTTP 404, error code 40401: Subject 'x' "
                                                "not found")
    long = json.dumps({"error_code": 50001, "message": "\x1b[2J" + "y" * 500}).encode()
    code, text = explain_answer(500, long)
    assert code == 50001 and "\x1b" not in text and text.endswith("...")
    assert len(text) < 260
    for junk in (b"<html>SECRET-TRACE</html>", b"[1]", b'{"error_code": true}', b"",
                 b"[" * 100_000):
        code, text = explain_answer(502, junk)
        assert code is None and text == "HTTP 502, no Confluent error in the answer"


@pytest.mark.parametrize(("status", "code", "kind"), [
    (301, None, "REDIRECTED"), (307, None, "REDIRECTED"),
    (500, 50001, "SERVER_ERROR"), (501, None, "SERVER_ERROR"), (429, None, "SERVER_ERROR"),
    (408, None, "SERVER_ERROR"),
    (401, 40101, "UNAUTHORIZED"), (403, 40301, "UNAUTHORIZED"),
    (404, 40401, "NOT_FOUND"), (404, 40403, "NOT_FOUND"), (404, None, "NOT_FOUND"),
    (409, 409, "INCOMPATIBLE"),
    (422, 42201, "INVALID_SCHEMA"), (422, 42202, "INVALID_REQUEST"),
    (400, None, "INVALID_REQUEST"), (415, None, "INVALID_REQUEST"),
])
def test_each_status_has_its_kind(status, code, kind):
    assert kind_of(status, code) == kind


def test_the_retried_statuses_are_confluents():
    assert sorted(RETRIABLE_STATUSES) == [408, 429, 500, 502, 503, 504]


def test_an_answer_without_schema_type_is_avro_and_references_are_read():
    answer = {"subject": "s", "version": 3, "id": 7, "schema": "{}",
              "references": [{"name": "a.proto", "subject": "a", "version": 1}]}
    assert schema_from_answer(answer) == RegisteredSchema(
        7, "AVRO", "{}", (SchemaReference("a.proto", "a", 1),), "s", 3)
    by_id = schema_from_answer({"schema": "x", "schemaType": "PROTOBUF"}, schema_id=9)
    assert (by_id.id, by_id.schema_type, by_id.subject, by_id.version) == (9, "PROTOBUF",
                                                                           None, None)


@pytest.mark.parametrize(("answer", "why"), [
    ([], "not a JSON object"),
    ({"id": 1}, "no schema string"),
    ({"schema": "x"}, "no integer id"),
    ({"schema": "x", "id": True}, "no integer id"),
    ({"schema": "x", "id": 1, "version": "1"}, "version is not an integer"),
    ({"schema": "x", "id": 1, "schemaType": "XML"}, "unknown schemaType 'XML'"),
    ({"schema": "x", "id": 1, "references": {}}, "references is not a list"),
    ({"schema": "x", "id": 1, "references": [{"name": "a"}]}, "without a name, subject"),
])
def test_answers_of_the_wrong_shape_say_what_is_wrong(answer, why):
    with pytest.raises(ValueError, match=why):
        schema_from_answer(answer)


def test_the_wait_between_rounds_is_full_jitter_capped():
    waits = [full_jitter_s(round_done, 100, 1000) for round_done in range(6) for _ in range(50)]
    assert all(0 <= w <= 1.0 for w in waits)
    assert max(full_jitter_s(0, 100, 1000) for _ in range(200)) <= 0.1
    assert full_jitter_s(3, 0, 1000) == 0


def test_a_request_body_leaves_out_avro_as_confluents_java_serializers_do():
    assert schema_body("{}", "AVRO", ()) == {"schema": "{}"}
    assert schema_body("p", "PROTOBUF", [SchemaReference("a.proto", "a", 2)]) == {
        "schema": "p", "schemaType": "PROTOBUF",
        "references": [{"name": "a.proto", "subject": "a", "version": 2}]}


# ------------------------------------------------------------------ requests refused early


def test_arguments_that_cannot_be_sent_are_refused_before_any_request():
    client = SchemaRegistryClient(RegistryConfig(("http://127.0.0.1:9",)))
    calls = [lambda: client.schema_by_id(-1), lambda: client.schema_by_id(True),
             lambda: client.version("s", 0), lambda: client.latest(""),
             lambda: client.register("s", "{}", "XML"),  # type: ignore[arg-type]
             lambda: client.set_compatibility("s", "SIDEWAYS")]
    for call in calls:
        with pytest.raises(ConfigurationError):
            call()
    assert client.requests_sent == 0


def test_an_error_never_shows_the_credentials_of_its_url():
    """A closed loopback port: the connection is refused at once, no server needed."""
    url = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    config = RegistryConfig((url.replace("//", f"//user:{QUOTED}@"),), max_retries=0,
                            request_timeout_s=2)
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE",
                          url, "refused") as caught:
        SchemaRegistryClient(config).latest("s")
    assert SECRET not in str(caught.value) and QUOTED not in str(caught.value)
    assert caught.value.url == url
