package volsched.esrunner;

import static org.codelibs.elasticsearch.runner.ElasticsearchClusterRunner.newConfigs;

import java.util.concurrent.CountDownLatch;

import org.codelibs.elasticsearch.runner.ElasticsearchClusterRunner;

/**
 * Starts one Elasticsearch node on 127.0.0.1 and blocks until the JVM is told to stop (SIGTERM).
 *
 * <p>Usage: {@code Main <httpPort> <transportPort> <basePath>}. Prints {@code READY <httpPort>} on
 * stdout once the cluster is yellow. This is a test fixture for volsched's metrics sources, not a
 * server to run anything real on.
 */
public final class Main {
    private Main() {
    }

    public static void main(final String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Main <httpPort> <transportPort> <basePath>");
            System.exit(2);
        }
        final int httpPort = Integer.parseInt(args[0]);
        final String transportPort = args[1];
        final String basePath = args[2];

        // Elasticsearch-py 7.x refuses a 7.0-7.13 server whose build flavor is not "default"; the
        // embedded node reads its flavor from this property ("unknown" otherwise).
        System.setProperty("es.distribution.flavor", "default");
        System.setProperty("es.distribution.type", "tar");

        final ElasticsearchClusterRunner runner = new ElasticsearchClusterRunner();
        runner.setMaxHttpPort(httpPort);
        runner.onBuild((number, settings) -> {
            settings.put("network.host", "127.0.0.1");
            settings.put("http.port", String.valueOf(httpPort));
            settings.put("transport.port", transportPort);
            settings.put("discovery.type", "single-node");
            settings.put("action.auto_create_index", "true");
            settings.put("cluster.routing.allocation.disk.threshold_enabled", "false");
        }).build(newConfigs()
                .basePath(basePath)
                .numOfNode(1)
                .baseHttpPort(httpPort - 1)
                .clusterName("volsched-metrics-test")
                .disableESLogger());
        runner.ensureYellow();

        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runner.close();
            } catch (final Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }));
        System.out.println("READY " + httpPort);
        System.out.flush();
        stopped.await();
    }
}
