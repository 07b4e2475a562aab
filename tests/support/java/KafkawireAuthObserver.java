package kafkawire.tests;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

import javax.security.sasl.SaslServer;

import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.security.auth.AuthenticationContext;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.KafkaPrincipalBuilder;
import org.apache.kafka.common.security.auth.KafkaPrincipalSerde;
import org.apache.kafka.common.security.auth.SaslAuthenticationContext;
import org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder;
import org.apache.kafka.common.security.kerberos.KerberosShortNamer;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A principal builder (KIP-189) for the test broker that builds exactly the principals of
 * Kafka's default builder and, once per SASL exchange, logs who logged in with which
 * mechanism on which listener, so that tests can see what the broker saw (Kafka itself logs
 * no principal on authentication).
 *
 * Kafka builds the principal of a SASL connection again for every request, each time from the
 * SaslServer of the exchange that authenticated it; a re-authentication (KIP-368) has a new
 * SaslServer. So one line per SaslServer is one line per authentication.
 *
 * System properties: kafkawire.observer.realm, the Kerberos default realm for the short names
 * of GSSAPI principals; kafkawire.observer.extensions, comma-separated SASL extension names
 * (KIP-342) to log, which OAUTHBEARER's SaslServer answers as negotiated properties.
 */
public class KafkawireAuthObserver implements KafkaPrincipalBuilder, KafkaPrincipalSerde, Configurable {
    private static final Logger LOG = LoggerFactory.getLogger("kafkawire.observer");
    private final Set<SaslServer> seen = Collections.synchronizedSet(
        Collections.newSetFromMap(new WeakHashMap<>()));
    private DefaultKafkaPrincipalBuilder delegate = newDelegate(List.of("DEFAULT"));

    private static DefaultKafkaPrincipalBuilder newDelegate(List<String> rules) {
        String realm = System.getProperty("kafkawire.observer.realm", "");
        return new DefaultKafkaPrincipalBuilder(KerberosShortNamer.fromUnparsedRules(realm, rules),
            SslPrincipalMapper.fromRules("DEFAULT"));
    }

    @Override
    @SuppressWarnings("unchecked")
    public void configure(Map<String, ?> configs) {
        Object rules = configs.get("sasl.kerberos.principal.to.local.rules");
        if (rules instanceof List) {
            delegate = newDelegate(new ArrayList<>((List<String>) rules));
        }
    }

    @Override
    public KafkaPrincipal build(AuthenticationContext context) {
        KafkaPrincipal principal = delegate.build(context);
        if (context instanceof SaslAuthenticationContext) {
            SaslAuthenticationContext sasl = (SaslAuthenticationContext) context;
            SaslServer server = sasl.server();
            if (server != null && server.isComplete() && seen.add(server)) {
                StringBuilder line = new StringBuilder("kafkawire-auth");
                line.append(" listener=").append(sasl.listenerName());
                line.append(" mechanism=").append(server.getMechanismName());
                line.append(" authzid=").append(server.getAuthorizationID());
                line.append(" principal=").append(principal);
                for (String name : System.getProperty("kafkawire.observer.extensions", "").split(",")) {
                    if (name.isEmpty()) {
                        continue;
                    }
                    Object value;
                    try {
                        value = server.getNegotiatedProperty(name);
                    } catch (RuntimeException e) {
                        value = null;
                    }
                    if (value instanceof String) {
                        line.append(" ext.").append(name).append('=').append(value);
                    }
                }
                LOG.info(line.toString());
            }
        }
        return principal;
    }

    @Override
    public byte[] serialize(KafkaPrincipal principal) {
        return delegate.serialize(principal);
    }

    @Override
    public KafkaPrincipal deserialize(byte[] bytes) {
        return delegate.deserialize(bytes);
    }
}
