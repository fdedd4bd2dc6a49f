package local.stack.registry;

import io.apicurio.common.apps.config.Dynamic;
import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.lang.reflect.Field;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.enterprise.inject.Any;
import javax.enterprise.inject.Produces;
import javax.enterprise.inject.spi.Bean;
import javax.enterprise.inject.spi.BeanManager;
import javax.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The registry's index of dynamic configuration properties (fields marked {@code @Dynamic @ConfigProperty}).
 *
 * <p>Apicurio builds this list at build time in a Quarkus extension whose deployment jar
 * (apicurio-common-app-components-config-index-deployment) Maven Central does not serve. This producer
 * builds the same list when the registry starts, from the fields of its beans, so the build needs only
 * what Maven Central has. Everything else is Apicurio's own code.
 */
@Singleton
public class DynamicConfigPropertyListProducer {

    /** One definition per dynamic property, as the extension's build step makes them. */
    @Produces
    @Singleton
    DynamicConfigPropertyList dynamicConfigProperties(BeanManager beans) {
        List<DynamicConfigPropertyDef> defs = new ArrayList<>();
        Set<Class<?>> seen = new HashSet<>();
        for (Bean<?> bean : beans.getBeans(Object.class, Any.Literal.INSTANCE)) {
            for (Class<?> c = bean.getBeanClass(); c != null && c != Object.class && seen.add(c); c = c.getSuperclass()) {
                for (Field field : c.getDeclaredFields()) {
                    DynamicConfigPropertyDef def = definition(field);
                    if (def != null) defs.add(def);
                }
            }
        }
        return new DynamicConfigPropertyList(defs);
    }

    /** The definition of a {@code @Dynamic @ConfigProperty Supplier<T>} field, else null. */
    private static DynamicConfigPropertyDef definition(Field field) {
        Dynamic dynamic = field.getAnnotation(Dynamic.class);
        ConfigProperty property = field.getAnnotation(ConfigProperty.class);
        if (dynamic == null || property == null || !(field.getGenericType() instanceof ParameterizedType)) return null;
        Type valueType = ((ParameterizedType) field.getGenericType()).getActualTypeArguments()[0];
        if (!(valueType instanceof Class)) return null;
        DynamicConfigPropertyDef def = new DynamicConfigPropertyDef(property.name(), (Class<?>) valueType, property.defaultValue());
        if (!dynamic.label().isEmpty()) def.setLabel(dynamic.label());
        if (!dynamic.description().isEmpty()) def.setDescription(dynamic.description());
        if (dynamic.requires().length > 0) def.setRequires(dynamic.requires());
        return def;
    }
}
