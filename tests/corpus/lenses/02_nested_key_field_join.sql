-- source: luanmorenomaciel/big-data-on-k8s:demos/stream/use-case-6/readme.md, commit 4c9c30e73323ffb1e2e70be891c25f3ec7eb1496
-- modeled on: SQL processor "computer & commerce join": two streams written by earlier processors joined ON a field of a structured key (`a._key.incr = b._key.incr`) WITHIN 7d, unqualified projection from both sides (a field named `type`), four SET lines, no final semicolon
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM stream_lenses_checkout_events (_key STRUCT<incr INT>, business_key VARCHAR, incr INT, total DOUBLE, coupon VARCHAR, total_text VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/checkout-events');
CREATE STREAM stream_lenses_device_events (_key STRUCT<incr INT>, business_key VARCHAR, incr INT, vendor VARCHAR, type VARCHAR, firmware VARCHAR, toolchain VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/device-events');
-- program:
SET defaults.topic.autocreate=true;
SET commit.interval.ms='1000';
SET enable.auto.commit=false;
SET auto.offset.reset='earliest';

INSERT INTO output_st_lenses_join_checkout_device_events
SELECT STREAM
vendor,
type,
firmware,
toolchain,
total,
coupon,
total_text
FROM stream_lenses_checkout_events as checkout JOIN stream_lenses_device_events as device
   ON checkout._key.incr = device._key.incr
WITHIN 7d
