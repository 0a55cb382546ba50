//! Kimi K2.5 tool declarations as TypeScript (cookbook
//! `renderers/kimi_k2_5_tool_declaration_ts.py`). (Being written.)
