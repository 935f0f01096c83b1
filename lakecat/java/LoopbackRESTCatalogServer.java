// Iceberg's REST catalog server (org.apache.iceberg.rest.RESTCatalogServer), built the same way, listening on one
// address instead of every interface: the stock server has no authentication and no setting for the address.
// It sits in Iceberg's package because the server's catalog context and adapter are package-private.
package org.apache.iceberg.rest;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import org.apache.iceberg.util.PropertyUtil;
import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Runs {@code RESTCatalogServer}'s catalog, adapter and servlet on the address of the system property
 * {@code lakecat.rest.host} (default 127.0.0.1); the port and the catalog come from the same environment as the
 * stock server's ({@code CATALOG_REST_PORT}, {@code CATALOG_URI}, ...).
 */
public final class LoopbackRESTCatalogServer {
  public static final String HOST_PROPERTY = "lakecat.rest.host";

  private LoopbackRESTCatalogServer() {}

  public static void main(String[] args) throws Exception {
    String host = System.getProperty(HOST_PROPERTY, "127.0.0.1");
    RESTCatalogServer.CatalogContext context = backendCatalog();

    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTServerCatalogAdapter(context))), "/*");
    CompressionHandler compression = new CompressionHandler();
    compression.putCompression(new GzipCompression());
    handler.insertHandler(compression);

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(
        PropertyUtil.propertyAsInt(
            context.configuration(),
            RESTCatalogServer.REST_PORT,
            RESTCatalogServer.REST_PORT_DEFAULT));
    connector.setReusePort(true); // as the stock server sets it
    server.addConnector(connector);
    server.setHandler(handler);
    server.start();
    server.join();
  }

  /** The stock server's own catalog setup (environment, JDBC defaults, warehouse): a private method, so reflection. */
  private static RESTCatalogServer.CatalogContext backendCatalog() throws Exception {
    Method init = RESTCatalogServer.class.getDeclaredMethod("initializeBackendCatalog");
    init.setAccessible(true);
    try {
      return (RESTCatalogServer.CatalogContext) init.invoke(new RESTCatalogServer());
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
    }
  }
}
