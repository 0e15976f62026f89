"""The data quality gate of the hourly enrichment output (`streamjoin quality check`, issue 6).

Hours are written without Spark, as the sink writes them (tests/hour_fixtures.py): a Delta table partitioned by hour on the
embedded S3 server plus the hour's completeness marker. A good hour has one row per city of a
10-city snapshot, one of them silent (NULL measures); each broken hour breaks it one way.
"""

import json
import logging
import urllib.request
from pathlib import Path

import hour_fixtures
import pyarrow as pa
import pytest
from hour_fixtures import (
    ALERT_VARIABLES,
    CITIES,
    HOUR,
    SCHEMA,
    a_duplicate_key,
    a_negative_measure,
    a_null_attribute,
    a_null_key,
    a_row_of_another_hour,
    exported_snapshot,
    fewer_rows_than_the_snapshot,
    free_port,
    good_rows,
    too_many_silent_cities,
    write_hour,
)
from streamjoin import cli
from streamjoin.io.sinks.hours import HourNotComplete, read_hour
from streamjoin.io.storage import s3
from streamjoin.quality import check_hour, read_verdict

APP = Path(__file__).resolve().parents[2] / "include" / "apps" / "hourly_city_sales"


@pytest.fixture(autouse=True)
def no_alert_channels(monkeypatch, tmp_path):
    """Only the tests that configure a channel deliver anything; the app's late rows are the
    test's own (none unless it writes some), never a demo run's under data/."""
    for name in (*ALERT_VARIABLES, "OUTPUT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHECKPOINT_PATH", str(tmp_path / "checkpoint"))


@pytest.fixture
def output(s3_prefix):
    return f"{s3_prefix}/output"


def failed_checks(verdict) -> set[tuple[str, str | None]]:
    return {(f.check, f.column) for f in verdict.failed}


def test_a_good_hour_passes_and_is_marked_passed(output):
    write_hour(output, good_rows())
    verdict = check_hour(APP, HOUR, output)
    assert verdict.passed and verdict.failed == [] and verdict.expectations == 11
    assert (verdict.rows, verdict.expected_rows) == (CITIES, CITIES)
    assert read_verdict(output, HOUR)["status"] == "passed"
    assert json.loads(s3.read_bytes(verdict.result))["success"] is True
    assert s3.read_bytes(verdict.docs) is not None
    assert verdict.alerts == {}  # nothing to alert about


BREAKAGES = [
    (fewer_rows_than_the_snapshot, {("row_count", None)}),
    (a_null_key, {("key_not_null", "city")}),
    (a_duplicate_key, {("key_unique", "city")}),
    (a_row_of_another_hour, {("hour", "sales_hour")}),
    (a_null_attribute, {("attribute_not_null", "region")}),
    (a_negative_measure, {("measure_non_negative", "total_sales")}),
    (too_many_silent_cities, {("null_measure_share", "total_sales"), ("null_measure_share", "sales")}),
]


@pytest.mark.parametrize("breakage, expected", [pytest.param(b, e, id=b.__name__) for b, e in BREAKAGES])
def test_a_broken_hour_fails_for_the_expectation_it_breaks_and_keeps_its_data(output, breakage, expected):
    rows = good_rows()
    breakage(rows)
    write_hour(output, rows)
    verdict = check_hour(APP, HOUR, output)
    assert not verdict.passed
    assert failed_checks(verdict) == expected  # every other expectation passed
    assert read_verdict(output, HOUR)["status"] == "failed"
    assert len(read_hour(output, HOUR)) == len(rows)


def test_an_hour_joined_with_an_exported_snapshot_passes_when_it_holds_exactly_its_keys_and_attributes(output, s3_prefix):
    write_hour(output, good_rows(), snapshot=exported_snapshot(f"{s3_prefix}/snapshots/city_info"))
    verdict = check_hour(APP, HOUR, output)
    assert verdict.passed and verdict.expectations == 11 + 4 and verdict.notes == []


def test_a_city_replaced_by_one_the_snapshot_lacks_fails_the_key_set_naming_both_cities(output, s3_prefix):
    """Row count, key uniqueness and attributes all intact: only the key set can see it."""
    rows = good_rows()
    rows[4]["city"] = "city-elsewhere"
    write_hour(output, rows, snapshot=exported_snapshot(f"{s3_prefix}/snapshots/city_info"))
    verdict = check_hour(APP, HOUR, output)
    assert not verdict.passed
    assert failed_checks(verdict) == {("key_set", "city"), ("attribute_matches_snapshot", "city, region"),
                                      ("attribute_matches_snapshot", "city, store_name")}
    unexpected, missing = [f for f in verdict.failed if f.check == "key_set"]
    assert unexpected.expected == "every value one of the snapshot's 10 keys"
    assert unexpected.observed == '1 of 10 rows unexpected, e.g. "city-elsewhere"'
    assert [r["city"] for r in unexpected.offending_rows] == ["city-elsewhere"]
    assert (missing.expected, missing.observed) == ("every one of the snapshot's 10 keys", '1 missing: "city-4"')
    assert "key_set: expect_column_distinct_values_to_contain_set on city" in verdict.summary()


def test_a_city_with_an_attribute_other_than_the_snapshots_fails_attribute_matches_snapshot(output, s3_prefix):
    rows = good_rows()
    rows[2]["region"] = "region-moved"
    write_hour(output, rows, snapshot=exported_snapshot(f"{s3_prefix}/snapshots/city_info"))
    verdict = check_hour(APP, HOUR, output)
    assert failed_checks(verdict) == {("attribute_matches_snapshot", "city, region")}
    (failure,) = verdict.failed
    assert failure.expected == "each (city, region) as in the snapshot"
    assert [(r["city"], r["region"]) for r in failure.offending_rows] == [("city-2", "region-moved")]


def test_an_hour_joined_with_a_table_read_from_files_says_its_key_set_was_not_compared(output):
    write_hour(output, good_rows())  # the marker's snapshot: "files city_info", which may have changed since
    verdict = check_hour(APP, HOUR, output)
    assert verdict.passed and verdict.expectations == 11
    assert verdict.notes == ["key set and attributes not compared with the snapshot: ci was read from files city_info, "
                             "not an exported snapshot version, so what it held then is unknown"]
    assert f"note: {verdict.notes[0]}" in verdict.summary() and read_verdict(output, HOUR)["notes"] == verdict.notes


def test_a_failure_says_what_was_expected_what_was_observed_and_which_rows_offend(output):
    rows = good_rows()
    a_null_key(rows)
    rows.pop()
    write_hour(output, rows)
    verdict = check_hour(APP, HOUR, output)
    by_check = {f.check: f for f in verdict.failed}
    assert set(by_check) == {"row_count", "key_not_null"}
    count, key = by_check["row_count"], by_check["key_not_null"]
    assert (count.expectation, count.expected, count.observed) == ("expect_table_row_count_to_equal", "exactly 10 rows", "9 rows")
    assert (key.expectation, key.expected, key.observed) == ("expect_column_values_to_not_be_null", "no NULL", "1 of 9 rows NULL (11.1%)")
    assert key.offending_rows == [{"sales_hour": "2024-01-01 10:00:00.000", "city": None, "region": "region-1",
                                   "store_name": "Store 1", "total_sales": 10.5, "sales": 1}]
    stored = read_verdict(output, HOUR)
    assert stored["failed"][1]["offending_rows"] == key.offending_rows and stored["expected_rows"] == 10


def test_an_hour_missing_an_attribute_column_fails_with_the_error_as_the_observed_value(output):
    from deltalake import write_deltalake

    write_hour(output, good_rows())
    schema = SCHEMA.remove(SCHEMA.get_field_index("store_name"))
    rows = [{k: v for k, v in r.items() if k != "store_name"} for r in good_rows()]
    write_deltalake(output, pa.Table.from_pylist(rows, schema), mode="overwrite", schema_mode="overwrite",
                    partition_by=["hour"], storage_options=s3.S3Settings.from_env().storage_options())
    verdict = check_hour(APP, HOUR, output)
    (failure,) = verdict.failed
    assert (failure.check, failure.column) == ("attribute_not_null", "store_name")
    assert failure.observed == 'error: Error: The column "store_name" in BatchData does not exist.'


def test_an_hour_without_a_completeness_marker_is_not_checked(output):
    with pytest.raises(HourNotComplete, match="not complete yet"):
        check_hour(APP, HOUR, output)


def test_the_data_docs_page_of_a_failed_hour_renders_the_failed_expectation(output):
    rows = good_rows()
    fewer_rows_than_the_snapshot(rows)
    write_hour(output, rows)
    verdict = check_hour(APP, HOUR, output)
    client = s3.S3Settings.from_env().client()

    def fetch(path: str) -> tuple[str, str]:
        bucket, key = s3.split(path)
        url = client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key})
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.headers["Content-Type"], response.read().decode()

    kind, index = fetch(verdict.docs)
    assert kind == "text/html" and "Failed" in index
    page = verdict.docs_page.rsplit("/docs/", 1)[1]
    assert page in index  # the index links to the validation's page
    kind, html = fetch(verdict.docs_page)
    assert kind == "text/html"
    text = visible_text(html)
    assert "Status: Failed" in text and "Unsuccessful Expectations 1" in text
    assert "Must have exactly 10 rows. 9" in text  # the failed expectation, then the observed value


def test_the_published_data_docs_load_every_script_style_and_font_from_their_own_folder(output):
    """Data Docs that open offline (issue 21): no page loads a CDN; each local asset it names exists."""
    import posixpath
    import re

    from streamjoin.data_docs import remote_assets

    write_hour(output, good_rows())
    verdict = check_hour(APP, HOUR, output)
    site = verdict.docs.rsplit("/", 1)[0]
    files = set(s3.list_files(site, recursive=True))
    pages = sorted(f for f in files if f.endswith(".html"))
    assert len(pages) >= 3  # the index, the suite's page, the validation's page
    for page in pages:
        html = s3.read_bytes(page).decode()
        assert remote_assets(html) == [], page
        local = re.findall(r"""(?:src|href)=["']([^"'#?]*static/vendor/[^"'#?]+)["']""", html)
        assert any(name.endswith("bootstrap.min.css") for name in local) and any(name.endswith("jquery.min.js") for name in local), page
        for name in local:
            folder = page.rsplit("/", 1)[0].removeprefix("s3://")
            assert "s3://" + posixpath.normpath(posixpath.join(folder, name)) in files, (page, name)
    assert any(f.endswith("webfonts/fa-solid-900.woff2") for f in files)  # what Font Awesome's CSS loads next


def visible_text(html: str) -> str:
    import html as entities
    import re

    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", entities.unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.fixture
def smtp_server():
    with hour_fixtures.smtp_server() as server:
        yield server


@pytest.fixture
def webhook_receiver():
    with hour_fixtures.webhook_receiver() as receiver:
        yield receiver


def test_a_failed_hour_is_alerted_by_email_and_webhook_with_the_failures_and_offending_rows(
        output, smtp_server, webhook_receiver, monkeypatch):
    port, inbox = smtp_server
    url, received = webhook_receiver
    monkeypatch.setenv("STREAMJOIN_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("STREAMJOIN_SMTP_PORT", str(port))
    monkeypatch.setenv("STREAMJOIN_SMTP_FROM", "gate@streamjoin.test")
    monkeypatch.setenv("STREAMJOIN_ALERT_EMAIL_TO", "data@streamjoin.test, oncall@streamjoin.test")
    monkeypatch.setenv("STREAMJOIN_ALERT_WEBHOOK_URL", url)
    rows = good_rows()
    a_duplicate_key(rows)
    write_hour(output, rows)
    verdict = check_hour(APP, HOUR, output)
    assert verdict.alerts == {"email": "sent", "webhook": "sent"}

    (recipients, message), = inbox.messages
    assert recipients == ["data@streamjoin.test", "oncall@streamjoin.test"]
    assert message["From"] == "gate@streamjoin.test"
    assert "hourly_city_sales" in message["Subject"] and HOUR in message["Subject"] and "failed" in message["Subject"]
    body = message.get_payload(decode=True).decode()
    (path, kind, payload), = received
    assert (path, kind) == ("/hooks/quality", "application/json")
    for text in (body, payload["text"]):
        assert f"app hourly_city_sales, hour {HOUR}" in text
        assert "key_unique: expect_column_values_to_be_unique on city" in text
        assert "expected: every value unique" in text
        assert 'observed: 2 of 10 rows unexpected, e.g. "city-1", "city-1"' in text
        assert '"city": "city-1", "region": "region-2", "store_name": "Store 2"' in text  # the duplicate
        assert verdict.verdict in text and verdict.docs_page in text


def test_undeliverable_alerts_are_logged_and_the_hour_still_fails_with_exit_code_1(output, monkeypatch, caplog, capsys):
    closed = free_port()  # nothing listens there
    monkeypatch.setenv("STREAMJOIN_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("STREAMJOIN_SMTP_PORT", str(closed))
    monkeypatch.setenv("STREAMJOIN_ALERT_EMAIL_TO", "data@streamjoin.test")
    monkeypatch.setenv("STREAMJOIN_ALERT_WEBHOOK_URL", f"http://127.0.0.1:{closed}/hook")
    rows = good_rows()
    a_negative_measure(rows)
    write_hour(output, rows)
    with caplog.at_level(logging.INFO, logger="streamjoin"):
        code = cli.main(["quality", "check", str(APP), "--hour", HOUR, "--output", output])
    assert code == 1
    errors = [r.getMessage() for r in caplog.records if r.name == "streamjoin.alerts" and r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert any(e.startswith("alert by email not delivered") for e in errors)
    assert any(e.startswith("alert by webhook not delivered") for e in errors)
    assert read_verdict(output, HOUR)["status"] == "failed"
    out, err = capsys.readouterr()
    assert "FAILED" in out and "measure_non_negative" in out
    assert err.strip().splitlines()[-1] == f"streamjoin: hourly_city_sales hour {HOUR} failed 1 of 11 quality expectations"


def test_streamjoin_quality_check_exits_0_for_a_good_hour_named_by_app_name_and_output_path(output, monkeypatch, capsys):
    write_hour(output, good_rows())
    monkeypatch.setenv("OUTPUT_PATH", output)
    assert cli.main(["quality", "check", "hourly_city_sales", "--hour", "2024-01-01 10:00:00"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"hourly_city_sales hour {HOUR}: PASSED (11 of 11 expectations met; 10 rows, 10 expected)")
    assert f"docs:    {output}/_quality/hour={HOUR}/docs/index.html" in out


def test_streamjoin_quality_check_exits_1_for_a_bad_hour_and_for_an_incomplete_one(output, capsys):
    assert cli.main(["quality", "check", str(APP), "--hour", HOUR, "--output", output]) == 1
    assert "is not complete yet" in capsys.readouterr().err.strip().splitlines()[-1]
    rows = good_rows()
    a_row_of_another_hour(rows)
    write_hour(output, rows)
    assert cli.main(["quality", "check", str(APP), "--hour", HOUR, "--output", output]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "hour: expect_column_values_to_be_between on sales_hour" in out
    assert "expected: >= 2024-01-01T10:00:00+00:00 and < 2024-01-01T11:00:00+00:00" in out


def test_checking_an_hour_logs_no_great_expectations_registration_noise_but_keeps_its_warnings(tmp_path):
    # a fresh process, as an Airflow task: Great Expectations is imported by the check, with the root logger at INFO
    import subprocess
    import sys

    script = tmp_path / "check.py"
    script.write_text(f"""
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s: %(levelname)s: %(message)s", stream=sys.stderr)
sys.path[:0] = [{str(Path(__file__).parents[1])!r}]
from hour_fixtures import HOUR, good_rows, write_hour
from streamjoin.quality import check_hour
write_hour({str(tmp_path / "output")!r}, good_rows())
print(check_hour({str(APP)!r}, HOUR, output={str(tmp_path / "output")!r}, alert=False).status)
print(logging.getLogger("great_expectations").getEffectiveLevel())
""")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["passed", str(logging.WARNING)]
    noise = [line for line in done.stderr.splitlines() if line.startswith("great_expectations") and ": INFO: " in line]
    assert noise == [], f"{len(noise)} lines, e.g. {noise[:3]}"


def _hour_before(hour: str, back: int) -> str:
    import datetime as dt

    return (dt.datetime.strptime(hour, "%Y-%m-%dT%H") - dt.timedelta(hours=back)).strftime("%Y-%m-%dT%H")


def test_an_hour_whose_input_fell_to_a_tenth_of_the_hours_before_fails_input_volume_with_the_numbers(output):
    """Issue 43: 198 sales where the hours before had ~2,000 (most of the hour's input went late),
    and the report said VALIDATED. Each good hour here sums 45 sales; the hour checked, 4."""
    for back in (3, 2, 1):
        earlier = _hour_before(HOUR, back)
        write_hour(output, good_rows(earlier), hour=earlier)
    thin = good_rows()  # city-0 silent as in every hour; four cities sold one each, the rest nothing
    for row in thin[1:]:
        row["sales"] = 1 if row["city"] in ("city-1", "city-2", "city-3", "city-4") else 0
    write_hour(output, thin)
    verdict = check_hour(APP, HOUR, output)
    assert not verdict.passed and ("input_volume", "sales") in failed_checks(verdict)
    (failure,) = [f for f in verdict.failed if f.check == "input_volume"]
    assert failure.expected.startswith("a sum of at least 22.5") and failure.observed == "4 in total", failure


def test_an_hour_as_busy_as_the_hours_before_passes_input_volume_and_the_first_hour_has_nothing_to_compare(output):
    first = _hour_before(HOUR, 1)
    write_hour(output, good_rows(first), hour=first)
    assert check_hour(APP, first, output).passed  # no complete hour before it: no volume expectation
    write_hour(output, good_rows())
    verdict = check_hour(APP, HOUR, output)
    assert verdict.passed and verdict.expectations == 13  # the 11 checks, input_volume and silent_share
    assert verdict.trailing == {"volumes": [45.0], "silent_shares": [0.1]}  # what the report's trend shows


def write_late_sales(tmp_path: Path, hour: str, count: int, other_hour: int = 0) -> None:
    """The app's late-rows output of its `sales` input: `count` rows of `hour` (and `other_hour`
    rows of the hour after it, which must not count), as the stager writes them."""
    folder = tmp_path / "checkpoint" / "late" / "sales"
    folder.mkdir(parents=True, exist_ok=True)
    day, hh = hour.split("T")
    rows = [{"sale_id": n, "city": "city-1", "amount": 1.0, "sale_time": f"{day} {hh}:{n % 60:02d}:00.000"} for n in range(count)]
    rows += [{"sale_id": n, "city": "city-1", "amount": 1.0, "sale_time": f"{day} {int(hh) + 1:02d}:00:00.000"}
             for n in range(other_hour)]
    (folder / "late-00000003.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_an_hour_whose_input_mostly_came_late_fails_late_share_with_the_numbers(output, tmp_path):
    """Issue 43: 1,805 of ~2,000 sales of an hour were late, and the report said VALIDATED. Here
    the hour has 45 sales on time and 90 late (two thirds): over the app's 0.2."""
    write_hour(output, good_rows())
    write_late_sales(tmp_path, HOUR, 90, other_hour=500)
    verdict = check_hour(APP, HOUR, output)
    assert not verdict.passed and failed_checks(verdict) == {("late_share", "sales")}
    (failure,) = verdict.failed
    assert failure.expected == "at most a share of 0.2 of the hour's input late: 90 late rows need a sum of at least 360 on time"
    assert failure.observed == "45 in total", failure


def test_an_hour_with_a_few_late_rows_passes_late_share(output, tmp_path):
    write_hour(output, good_rows())
    write_late_sales(tmp_path, HOUR, 5, other_hour=500)  # 5 of 50: a tenth
    verdict = check_hour(APP, HOUR, output)
    assert verdict.passed and verdict.expectations == 12  # the 11 checks and late_share


def test_an_hour_with_half_its_cities_silent_where_a_tenth_were_before_fails_silent_share(output):
    """Issue 43: 84 of 200 cities silent in an hour whose hours before had a tenth silent. Here 5
    of 10 (the absolute bound, 0.5, lets it through) against 1 of 10 in each hour before."""
    for back in (3, 2, 1):
        earlier = _hour_before(HOUR, back)
        write_hour(output, good_rows(earlier), hour=earlier)
    quiet = good_rows()
    for row in quiet[1:5]:
        row["sales"], row["total_sales"] = None, None
    write_hour(output, quiet)
    verdict = check_hour(APP, HOUR, output)
    assert not verdict.passed and failed_checks(verdict) == {("silent_share", "sales")}
    (failure,) = verdict.failed
    assert failure.expected == "NULL in at most 30% of the rows" and failure.observed.startswith("5 of 10 rows NULL"), failure
