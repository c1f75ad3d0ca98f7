//! `--model FILE`: a model for `auto`'s price as `hgemm calibrate` writes it (JSON), or the
//! built-in one.

use hgemm::{KernelSpec, Model};
use std::path::Path;

/// The model in `path` (checked against `entries`: a rate for every tile), or the built-in one.
pub fn load<'a>(path: Option<&Path>, entries: impl Iterator<Item = &'a KernelSpec>) -> Result<Model, String> {
    let Some(path) = path else { return Ok(Model::BUILT_IN) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let model: Model = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    model.check(entries).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(model)
}
