"""The declared domain and the data read against it: the schema (columns, categories, bins), structures
(lookups, structural zeros), encoding and decoding, contingency tables, the content fingerprint, and ψ (the
noisy marginals a generator fits: :mod:`.psi`).

The names below are the room's face (what other rooms use); they load on first use, so importing the room
costs nothing.
"""

from sdgov.base.face import lazy_face

_WHERE = {
    "Clique": "schema",
    "Column": "schema",
    "CsvShape": "encoding",
    "LookupIndex": "structures",
    "Measurement": "psi",
    "MeasurementSet": "psi",
    "Schema": "schema",
    "ZeroCells": "structures",
    "check_file_columns": "encoding",
    "columns": "fingerprint",
    "contingency_table": "tables",
    "csv_header": "encoding",
    "csv_shape": "encoding",
    "decode": "encoding",
    "discard_zero_noise": "structures",
    "encode": "encoding",
    "encode_distinct": "encoding",
    "fingerprint_of_groups": "fingerprint",
    "first_non_utf8_line": "encoding",
    "impossible": "structures",
    "load_schema": "schema",
    "nfc": "schema",
    "packs": "fingerprint",
    "records_where": "tables",
    "repeated": "schema",
    "zeros_within": "structures",
}
__all__ = [
    "Clique",
    "Column",
    "CsvShape",
    "LookupIndex",
    "Measurement",
    "MeasurementSet",
    "Schema",
    "ZeroCells",
    "check_file_columns",
    "columns",
    "contingency_table",
    "csv_header",
    "csv_shape",
    "decode",
    "discard_zero_noise",
    "encode",
    "encode_distinct",
    "fingerprint_of_groups",
    "first_non_utf8_line",
    "impossible",
    "load_schema",
    "nfc",
    "packs",
    "records_where",
    "repeated",
    "zeros_within",
]
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
