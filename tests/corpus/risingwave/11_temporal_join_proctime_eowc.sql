-- source: risingwavelabs/risingwave:e2e_test/streaming/temporal_join/append_only/temporal_join_watermark.slt (statements only; INSERTs and result checks left out), snapshot 448c6570b1b9d636736708340f61a85900c2b7d7
-- modeled on: SET session variables, an APPEND ONLY table with an inline watermark for v AS v - INTERVAL '10' SECOND, a versioned table with PRIMARY KEY, a LEFT JOIN ... FOR SYSTEM_TIME AS OF PROCTIME() MV, a tumble() over that MV grouped by window_start with EMIT ON WINDOW CLOSE, then DROP TABLE ... CASCADE cleanup
-- dialect: risingwave
-- check: ok
SET RW_IMPLICIT_FLUSH TO true;

SET streaming_parallelism = 1;

create table scans(scan_id int, kiosk int, lane int, scanned_at timestamp with time zone, watermark for scanned_at as scanned_at - INTERVAL '10' SECOND) APPEND ONLY;

create table kiosk_info(kiosk_id int, zone int, floor int, primary key (kiosk_id));

create materialized view scans_with_kiosk as select scan_id, kiosk, kiosk_id, scanned_at from scans left join kiosk_info FOR SYSTEM_TIME AS OF PROCTIME() on scan_id = kiosk_id;

create materialized view scans_per_window as select window_start, count(scan_id) from tumble(scans_with_kiosk, scanned_at, interval '5 s') group by window_start emit on window close;

drop table scans cascade;

drop table kiosk_info cascade;

SET streaming_parallelism = 0;
