"""When kafkawire logs in again under KIP-368 (plan_reauthentication), against the rule Apache
Kafka found by the re-authentication tests on its REAUTH listener: it refuses a re-authentication
that begins less than a second after the previous re-authentication began
(KafkaChannel.maybeBeginServerReauthentication answers it ILLEGAL_SASL_STATE), which a session
capped by a token about to expire made kafkawire do."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.security.sasl.authenticate import (
    MIN_REAUTH_INTERVAL_S,
    REAUTH_MARGIN_S,
    ReauthPlan,
    plan_reauthentication,
)


def test_no_session_no_plan() -> None:
    assert plan_reauthentication(0, 10.0, 10.1, was_reauthentication=True) is None


def test_at_85_percent_of_the_session() -> None:
    assert plan_reauthentication(3000, 10.0, 10.1, was_reauthentication=True) == ReauthPlan(
        pytest.approx(10.1 + 2.55))


def test_a_first_login_is_not_held_to_the_one_second_minimum() -> None:
    """Kafka counts re-authentications only: after a first login a short session is
    re-authenticated at 85% of it."""
    assert plan_reauthentication(800, 10.0, 10.05, was_reauthentication=False) == ReauthPlan(
        pytest.approx(10.05 + 0.68))


def test_a_re_authentication_waits_for_kafkas_one_second_minimum() -> None:
    """A 1.2 s session after a re-authentication: 85% (1.02 s after its end) would come before
    the broker takes another one; it waits for the minimum, still inside the session."""
    plan = plan_reauthentication(1200, 10.0, 10.05, was_reauthentication=True)
    assert plan == ReauthPlan(pytest.approx(10.0 + MIN_REAUTH_INTERVAL_S + REAUTH_MARGIN_S))
    assert plan is not None and plan.at < 10.05 + 1.2 and not plan.reconnect


def test_a_session_too_short_to_re_authenticate_in_is_left_for_a_new_connection() -> None:
    """0.65 s left of the token that capped the session (what Kafka 4.1.1 granted in
    test_kafka_refreshed_token_on_reauthentication): the next re-authentication could begin only
    after the session ended, when Kafka closes the connection at its next request; kafkawire
    logs in on a new connection at 85% of the session instead."""
    plan = plan_reauthentication(650, 10.0, 10.02, was_reauthentication=True)
    assert plan == ReauthPlan(pytest.approx(10.02 + 0.5525), reconnect=True)
