"""The users, clients and passwords the secured test brokers accept (fixtures in tests/conftest.py).

One place for them so that the librdkafka proofs and kafkawire's own security tests log in with
the same names.
"""

from __future__ import annotations

from tests.support.oauth_server import AUDIENCE, ISSUER, TokenEndpoint
from tests.support.sasl_mechanisms import Credentials, OAuthSettings

#: PLAIN and SCRAM-SHA-256/512 users (the SCRAM credentials are derived from these passwords).
SASL_USERS = {"alice": "alice-secret", "bob": "bob-secret"}
#: OAuth client-credentials client of the token endpoint; its tokens carry sub=OAUTH_CLIENT_ID.
OAUTH_CLIENT_ID = "kafkawire-client"
OAUTH_CLIENT_SECRET = "kafkawire-client-secret"
#: AWS access key -> secret key whose MSK IAM tokens the SASL front accepts, in AWS_REGION.
AWS_KEYS = {"AKIAKAFKAWIRETEST": "kafkawire-aws-secret-key"}
AWS_REGION = "us-east-1"
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def start_token_endpoint() -> TokenEndpoint:
    return TokenEndpoint({OAUTH_CLIENT_ID: OAUTH_CLIENT_SECRET}).start()


def credentials(token_endpoint: TokenEndpoint, allow_unsecured: bool = True) -> Credentials:
    """PLAIN/SCRAM users plus OAUTHBEARER tokens signed by ``token_endpoint`` (and, unless
    turned off, unsecured alg=none tokens as Kafka's default unsecured validator accepts, and
    Amazon MSK IAM tokens signed with AWS_KEYS)."""
    return Credentials(users=dict(SASL_USERS), oauth=OAuthSettings(
        public_key=token_endpoint.public_key, issuer=ISSUER, audience=AUDIENCE,
        allow_unsecured=allow_unsecured, aws_keys=dict(AWS_KEYS), aws_region=AWS_REGION))
