"""Amazon MSK IAM over OAUTHBEARER: the token is a SigV4-presigned ``kafka-cluster:Connect``
URL, base64url-encoded, made by AWS's aws-msk-iam-sasl-signer-python
(https://github.com/aws/aws-msk-iam-sasl-signer-python; MSK's docs:
https://docs.aws.amazon.com/msk/latest/developerguide/iam-access-control.html).

The signer is the optional extra ``[aws]``. It signs with the AWS credentials of the process
that logs in, each executor's included (the default chain: environment, profile, instance or
container role), with a named profile (JAAS ``awsProfileName``) or after assuming a role
(``awsRoleArn``, ``awsRoleSessionName``), as aws-msk-iam-auth's ``IAMLoginModule`` options
say in Java. The region is the cluster's (see :func:`region_from_host`).
"""

from __future__ import annotations

import re

from spark_kafka_wire.client.errors import SECURITY_SETTING, ConfigurationError, OAuthTokenError
from spark_kafka_wire.client.security.sasl.bearer import Token, token_from
from spark_kafka_wire.client.security.sasl.oauth_config import OAuthConfig

#: What to install, by the package itself: kafkawire is installed from its clone or a wheel
#: (not yet from PyPI), where the [aws] extra means this one package.
INSTALL = "pip install aws-msk-iam-sasl-signer-python (kafkawire's [aws] extra)"
# b-1.name.abc123.c2.kafka.us-east-1.amazonaws.com, boot-x.c1.kafka-serverless.eu-west-1...
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com"
                       r"(?:\.cn)?$")


def region_from_host(host: str) -> str | None:
    """The AWS region in an MSK broker's host name, as aws-msk-iam-auth derives it."""
    found = _MSK_HOST.search(host.lower())
    return found.group(1) if found else None


def check_signer() -> None:
    """ConfigurationError (on the driver) when the [aws] extra is not installed."""
    try:
        import aws_msk_iam_sasl_signer  # noqa: F401, PLC0415 (the optional [aws] extra)
    except ImportError:
        raise ConfigurationError.of(SECURITY_SETTING, "AWS_SIGNER_MISSING", install=INSTALL) from None


def aws_token(config: OAuthConfig) -> Token:
    """A presigned MSK IAM token and its expiry."""
    source = f"AWS MSK IAM signer (region {config.region}, {config.principal})"
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider  # noqa: PLC0415 (the optional [aws] extra)
    except ImportError:
        raise OAuthTokenError(source, f"aws-msk-iam-sasl-signer-python is not installed in "
                              f"this Python process: {INSTALL} on every executor") from None
    try:
        if config.aws_role_arn:
            value, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(
                config.region, config.aws_role_arn,
                config.aws_role_session_name or "MSKSASLDefaultSession")
        elif config.aws_profile:
            value, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(
                config.region, config.aws_profile)
        else:
            value, expiry_ms = MSKAuthTokenProvider.generate_auth_token(config.region)
    except Exception as exc:  # botocore's many credential errors; their text holds no secret
        raise OAuthTokenError(source, f"signing failed: {type(exc).__name__}: {exc}. Check "
                              "that AWS credentials are available to every Python process "
                              "(environment, profile or instance role)") from None
    return token_from(value, source, expires_ms=int(expiry_ms))
