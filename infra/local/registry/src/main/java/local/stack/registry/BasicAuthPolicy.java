package local.stack.registry;

import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.vertx.http.runtime.security.HttpSecurityPolicy;
import io.smallrye.mutiny.Uni;
import io.vertx.ext.web.RoutingContext;
import javax.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * HTTP basic authentication for every request but the health checks, when the registry is started
 * with {@code -Dlocal.registry.basic-auth=true} (users: {@code quarkus.security.users.embedded.users.<name>}).
 *
 * <p>Apicurio's own authentication needs an OpenID Connect server (it trades basic credentials for a
 * token there). Quarkus checks basic credentials against its embedded users by itself, but the paths it
 * guards are fixed when the registry is built; this policy, which Quarkus applies to every request,
 * decides when the registry starts, so one build serves both an open and a guarded registry.
 */
@Singleton
public class BasicAuthPolicy implements HttpSecurityPolicy {

    @ConfigProperty(name = "local.registry.basic-auth", defaultValue = "false")
    boolean required;

    @Override
    public Uni<CheckResult> checkPermission(RoutingContext request, Uni<SecurityIdentity> identity, AuthorizationRequestContext context) {
        if (!required || request.normalizedPath().startsWith("/health")) return Uni.createFrom().item(CheckResult.PERMIT);
        // An anonymous identity is denied with a 401 and the basic challenge.
        return identity.map(id -> id.isAnonymous() ? CheckResult.DENY : CheckResult.PERMIT);
    }
}
