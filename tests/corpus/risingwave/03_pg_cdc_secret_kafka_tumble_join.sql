-- source: risingwavelabs/risingwave:integration_tests/postgres-cdc/create_source.sql + create_mv.sql, snapshot 448c6570b1b9d636736708340f61a85900c2b7d7
-- modeled on: CREATE SECRET (backend = 'meta') used as password = secret name in postgres-cdc CREATE TABLEs with quoted columns and PRIMARY KEY, a Kafka JSON source, a plain VIEW converting an epoch column with to_timestamp, and MVs where a CDC table joins a TUMBLE-grouped subquery over that view
-- dialect: risingwave
-- check: ok
create secret warehouse_pwd with (backend = 'meta') as 'not-a-real-password';

create table vendor (
    "id" int,
    "name" varchar,
    "contact_email" varchar,
    "iban" varchar,
    "region" varchar,
    PRIMARY KEY ("id")
) with (
    connector = 'postgres-cdc',
    hostname = 'pg-primary',
    port = '5432',
    username = 'cdc_reader',
    password = secret warehouse_pwd,
    database.name = 'supply',
    schema.name = 'public',
    table.name = 'vendor',
    slot.name = 'vendor'
);

CREATE SOURCE t_listing (
    id BIGINT,
    title VARCHAR,
    listed_at BIGINT,
    vendor_id INT,
    aisle INT
) WITH (
    connector = 'kafka',
    topic = 'listing',
    properties.bootstrap.server = 'broker:29092',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

CREATE VIEW listing as
SELECT
    id,
    title,
    to_timestamp(listed_at) as listed_at,
    vendor_id,
    aisle
FROM
    t_listing;

CREATE TABLE invoices_rw (
    I_INVOICEKEY BIGINT,
    I_VENDORKEY BIGINT,
    I_STATE VARCHAR,
    I_AMOUNT DECIMAL,
    I_ISSUED DATE,
    I_PRIORITY VARCHAR,
    I_CLERK VARCHAR,
    I_TERMS BIGINT,
    I_NOTE VARCHAR,
    PRIMARY KEY (I_INVOICEKEY)
) WITH (
    connector = 'postgres-cdc',
    hostname = 'pg-primary',
    port = '5432',
    username = 'cdc_reader',
    password = secret warehouse_pwd,
    database.name = 'supply',
    schema.name = 'public',
    table.name = 'invoices',
    slot.name = 'invoices'
);

CREATE MATERIALIZED VIEW region_vendors AS
SELECT
    region,
    COUNT(*) as vendors
FROM
    vendor
GROUP BY
    region;

-- A CDC table joined with a Kafka stream
CREATE MATERIALIZED VIEW active_vendors AS
SELECT
    V.id,
    V.name,
    L.starttime
FROM
    vendor as V
    JOIN (
        SELECT
            vendor_id,
            window_start AS starttime,
            window_end AS endtime
        FROM
            TUMBLE(listing, listed_at, INTERVAL '10' SECOND)
        GROUP BY
            vendor_id,
            window_start,
            window_end
    ) L ON V.id = L.vendor_id;

CREATE MATERIALIZED VIEW invoices_rw_count AS
SELECT
    COUNT(*) as cnt
FROM
    invoices_rw;
