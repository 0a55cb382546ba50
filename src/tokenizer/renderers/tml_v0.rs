//! Cookbook `renderers/tml_v0.py`: not ported yet (its names are refused as unknown).

use super::base::ChatRenderer;
use super::RendererOptions;

pub(super) fn by_name(_name: &str, _opts: &RendererOptions) -> Option<Box<dyn ChatRenderer>> {
    None
}
