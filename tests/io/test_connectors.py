"""The registry of connectors (io.connectors): what a stream may be read from, which reader the
stager builds for a log input, and which writer an output address gets."""

from __future__ import annotations

from types import SimpleNamespace

from streamjoin.io.connectors import CONNECTORS, LOGS, OUTPUTS, STREAM_CONNECTORS, load, log_reader, output_of, writer_for


def test_every_log_connector_names_a_reader_built_from_an_input_spec_and_every_output_a_writer():
    assert set(LOGS) == {"kinesis", "kafka", "postgres-cdc"}
    assert set(STREAM_CONNECTORS) == {"files", "s3", "kinesis", "kafka", "postgres-cdc"}
    for name in LOGS:
        assert callable(load(CONNECTORS[name].reader).from_spec), name
    for output in OUTPUTS:
        assert callable(load(output.writer)), output


def test_the_stager_gets_the_reader_of_the_log_whose_options_the_input_carries():
    cdc = {"connection": {"host": "h", "port": 5432, "dbname": "d"}, "table": "t", "columns": ["k"], "slot": "s"}
    spec = SimpleNamespace(kinesis=None, kafka=None, cdc=cdc, on_error="fail", changelog=None, storage=None)
    built = log_reader(spec, parse=len)
    assert type(built).__name__ == "PostgresCdcSource" and built.options is cdc
    assert log_reader(SimpleNamespace(kinesis=None, kafka=None, cdc=None), parse=len) is None  # files


def test_an_output_address_picks_its_writer_and_a_folder_or_stdout_none(tmp_path):
    assert output_of("kafka://orders").folder == "kafka_sink"
    assert output_of("kinesis://alerts").folder == "kinesis_sink"
    assert output_of(str(tmp_path)) is None and output_of("-") is None
    assert writer_for(str(tmp_path / "out"), "", tmp_path) is None
