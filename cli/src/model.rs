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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_models_load_and_rate_every_hopper_entry() {
        let hopper = || hgemm_kernels::kernels().filter(|k| k.family == hgemm::Family::Hopper);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/models");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let m = load(Some(&path), hopper()).unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(m, Model::BUILT_IN, "{}", path.display());
            n += 1;
        }
        assert!(n > 0, "no model in {}", dir.display());
        assert_eq!(load(None, hopper()), Ok(Model::BUILT_IN));
        assert!(load(Some(Path::new("/nonexistent.json")), hopper()).is_err());
    }
}
