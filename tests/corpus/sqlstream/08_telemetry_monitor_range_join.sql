-- source: github NigelThomas/fpp-dev:test/monitor-fpp.sql, commit a7955bd224d4868ec991411df4ce69db77c17d66 (2020-06-15)
-- modeled on: pipeline monitor built from s-Server's own telemetry: views over stream(sys_boot.mgmt.getServerInfoForever(n)) and stream(sys_boot.mgmt.getStreamOperatorInfoForever(0,n)) with a constant join key, a GROUP BY s.rowtime pivot with max(case ...), a stream-stream join ... over (range interval '30' second preceding) s on the constant key, and a STEP(... BY ...) = STEP(...) filter; unquoted lower-case names, SET SCHEMA '"x"'
-- dialect: sqlstream
-- check: 08_telemetry_monitor_range_join.sql:14:6: error: STREAM("SYS_BOOT"."MGMT".getServerInfoForever(...)) reads an s-Server table function's rows (a UDX or s-Server's own telemetry); streamjoin runs no s-Server functions
-- fair rejection: its inputs are s-Server's own telemetry (STREAM(sys_boot.mgmt.get...Forever(n))), which only a running s-Server produces
create or replace schema "watch";
set schema '"watch"';


create or replace view serverstats as
select stream 
       1 as jkey
      , s.* 
from stream(sys_boot.mgmt.getServerInfoForever(30)) s;

create or replace view streamstats as 
select stream 
  * 
, 1 as jkey,name_in_query_plan as stream_name
from stream(sys_boot.mgmt.getStreamOperatorInfoForever(0,30)) s
where name_in_query_plan like '[LOCAL%';

create or replace view streamstats_agg as
select stream jkey
     , measured_at
     , max(case when name_in_query_plan like '%orders_in%' then net_input_rows else null end) as input_rows
     , max(case when name_in_query_plan like '%orders_in%' then net_input_row_rate else null end) as input_row_rate
     , max(case when name_in_query_plan like '%orders_in%' then input_rowtime_clock else null end) as input_rowtime
     , max(case when name_in_query_plan like '%enriched_out%' then net_output_rows else null end) as output_rows
     , max(case when name_in_query_plan like '%enriched_out%' then output_rowtime_clock else null end) as output_rowtime
     , max(case when name_in_query_plan like '%orders_in%' then net_output_row_rate else null end) as output_row_rate
from streamstats s
group by s.rowtime, s.measured_at, jkey;

create or replace view pipeline_monitor as
select stream s.measured_at,s.net_memory_bytes,s.max_memory_bytes
    , a.input_rows, a.input_row_rate, a.input_rowtime
    , a.output_rows, a.output_row_rate, a.output_rowtime
from   streamstats_agg a
join   serverstats over (range interval '30' second preceding) s on s.jkey = a.jkey;


create or replace view pipeline_monitor_10 as
select stream * from pipeline_monitor s
where  step(s.rowtime by interval '1' minute) = step(s.rowtime by interval '10' minute)
;
