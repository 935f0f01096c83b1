"""Iceberg in a Spark session: the runtime jar, the SQL extensions, and one Spark catalog per lakecat catalog."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...config import CatalogConfig

RUNTIME = "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0"
# Iceberg's S3FileIO plus AWS SDK v2 2.44.4 under its own package names: hadoop-aws links against the
# same SDK classes, so the 600 MB software.amazon.awssdk:bundle that hadoop-aws asks for is excluded,
# and so is analyticsaccelerator-s3, which iceberg-aws-bundle carries as well (lakecat.jar_sets.S3_EXCLUDES).
AWS_BUNDLE = "org.apache.iceberg:iceberg-aws-bundle:1.11.0"
EXTENSION = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
#: The catalog config's section for this format (``[iceberg]``: ``type``, ``uri``, ... as Iceberg's catalog properties).
SECTION = "iceberg"


def catalog_conf(config: CatalogConfig) -> dict[str, str]:
    """Spark settings for the config's Iceberg catalog (named like the lakecat catalog).

    JDBC (the default): Iceberg's JdbcCatalog over lakecat's metastore. REST (``[iceberg] type = "rest"``):
    Iceberg's RESTCatalog with the section's settings as they are (``uri``, ``warehouse``, ``token``,
    ``credential``, ``scope``, ``oauth2-server-uri``, ...); the warehouse is then the REST catalog's to choose
    unless ``[iceberg] warehouse`` names one.
    """
    prefix = f"spark.sql.catalog.{config.name}"
    options = {k: v for k, v in config.format_options.get(SECTION, {}).items() if v != ""}
    rest = options.get("type", "jdbc").strip().lower() == "rest"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        # Other engines (pyiceberg, other lakecat processes) commit too: always read the current metadata.
        f"{prefix}.cache-enabled": "false",
    }
    if not rest:
        conf[f"{prefix}.warehouse"] = config.warehouse_uri
    s3 = config.s3()
    if s3 is not None:
        conf[f"{prefix}.io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
        conf[f"{prefix}.client.region"] = s3.region
        conf[f"{prefix}.s3.path-style-access"] = str(s3.path_style).lower()
        if s3.endpoint:
            conf[f"{prefix}.s3.endpoint"] = s3.endpoint
    if not rest:
        uri, props = config.metastore.jdbc()
        conf[f"{prefix}.type"] = "jdbc"
        conf[f"{prefix}.uri"] = uri
        for k, v in props.items():
            conf[f"{prefix}.jdbc.{k}"] = v
    for k, v in options.items():
        conf[f"{prefix}.{k}"] = v.strip().lower() if k == "type" else v
    return conf
