"""`harness import`: chat logs and public benchmarks turned into chronologies.

One module per input format (`openai_chat`, `multichallenge`, `longmemeval`,
`factconsolidation`, `locomo`, `mrcr`), each turning the records of one file into chronology documents; `source`
reads the input file (its bytes, SHA-256, records and licence), `turns` makes turns of a recorded
conversation, `literal` makes an RE2 pattern of a piece of text, `emit` writes a document as YAML
and names its file, `placing` validates every document with the chronology loader and writes
them, all or none, and `formats` runs one of the
`FORMATS` named here (where `harness import` names its choices without importing the readers).
This wing sits on `chronology` and `base` only (docs/importing.md).
"""

FORMATS = (
    "openai-chat",
    "multichallenge",
    "longmemeval",
    "factconsolidation",
    "sharegpt",
    "compactbench",
    "locomo",
    "mrcr",
)
