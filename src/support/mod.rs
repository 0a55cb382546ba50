//! Support: private utilities of the core (JSON, float printing, string-keyed maps,
//! base64, the cancellation token, zstd frames, substring search). Nothing here knows of the protocol;
//! none of it is public API (the fuzz targets reach it through the `fuzzing` feature).

pub(crate) mod base64;
pub(crate) mod float;
pub(crate) mod json;
pub(crate) mod map;
pub(crate) mod sync;
pub(crate) mod text;
pub(crate) mod zstd;
