"""`harness import`: chat logs and public benchmarks turned into chronologies.

One module per input format (`openai_chat`, `multichallenge`, `longmemeval`,
`factconsolidation`), each turning the records of one file into chronology documents; `source`
reads the input file (its bytes, SHA-256 and licence), `literal` makes an RE2 pattern of a piece of
text, `emit` writes a document as YAML and names its file, `formats` names the formats, and
`placing` validates every document with the chronology loader and writes them, all or none.
This wing sits on `chronology` and `base` only (docs/importing.md).
"""
