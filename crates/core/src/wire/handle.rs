//! Sampler handles: a string that lets another process, worker or request sample from a
//! sampler, in the Python SDK 0.38's format (`SamplingClient.get_sampler_handle` /
//! `from_sampler_handle`), so handles move between this SDK and Python in both directions.
//!
//! A handle is URL-safe base64 (with padding) of compact JSON:
//! `{"session_id", "sampling_session_id", "holder": {"base_url",
//! "default_headers_overrides", "client_config", "client_dynamic_config", "api_key": null},
//! "base_model", "record_stability_info"}`. It carries no credentials: the receiver
//! authenticates with its own.
//!
//! ```
//! use tinker_core::handle::SamplerHandle;
//! let h = SamplerHandle::decode(
//!     "eyJzZXNzaW9uX2lkIjoicyIsInNhbXBsaW5nX3Nlc3Npb25faWQiOiJzOnNhbXBsZTowIiwiaG9sZGVyIjp7ImJhc2VfdXJsIjoiaHR0cDovLzEyNy4wLjAuMTo4MCIsImRlZmF1bHRfaGVhZGVyc19vdmVycmlkZXMiOnt9LCJjbGllbnRfY29uZmlnIjp7fSwiY2xpZW50X2R5bmFtaWNfY29uZmlnIjp7fSwiYXBpX2tleSI6bnVsbH0sImJhc2VfbW9kZWwiOiJRd2VuL1F3ZW4zLThCIiwicmVjb3JkX3N0YWJpbGl0eV9pbmZvIjpmYWxzZX0=",
//! )
//! .unwrap();
//! assert_eq!(h.sampling_session_id, "s:sample:0");
//! assert_eq!(h.holder.base_url, "http://127.0.0.1:80");
//! ```
use crate::config::{DynamicConfig, ServerConfig};
use crate::error::Error;
use crate::json;
use crate::json::FromJson;
use crate::json::{Map, Value};
use crate::types::InputError;

/// What a handle says about the client that made it (Python's `_ShadowHolderConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct HandleHolder {
    /// The server the sampler lives on.
    pub base_url: String,
    /// Extra request headers of the client that made the handle (string values:
    /// [`SamplerHandle::decode`] checks).
    pub default_headers_overrides: Map,
    /// Server flags, as the making client last had them.
    pub client_config: ServerConfig,
    /// Dynamic server flags, as the making client last had them.
    pub client_dynamic_config: DynamicConfig,
    /// Always `null` in a handle; ignored when read (the receiver uses its own key, as
    /// Python's `from_sampler_handle` does).
    pub api_key: (),
}

/// A decoded sampler handle (Python's `_SamplingClientPickleState`).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerHandle {
    /// The session the sampler belongs to (the restored client heartbeats it).
    pub session_id: String,
    /// The sampler.
    pub sampling_session_id: String,
    /// How to reach the server.
    pub holder: HandleHolder,
    /// The sampler's base model.
    pub base_model: String,
    /// Whether samples record stability information.
    pub record_stability_info: bool,
}

/// URL-safe base64 with padding (read with or without it).
struct Engine;

const ENGINE: Engine = Engine;

impl Engine {
    fn encode(&self, text: impl AsRef<[u8]>) -> String {
        crate::base64::encode(text.as_ref(), true, true)
    }
    fn decode(&self, text: impl AsRef<str>) -> Result<Vec<u8>, String> {
        crate::base64::decode(text.as_ref(), true, crate::base64::Padding::Optional)
    }
}

impl SamplerHandle {
    /// The handle string.
    pub fn encode(&self) -> String {
        let h = &self.holder;
        let v = json!({
            "session_id": self.session_id,
            "sampling_session_id": self.sampling_session_id,
            "holder": {
                "base_url": h.base_url,
                "default_headers_overrides": h.default_headers_overrides,
                "client_config": h.client_config.to_json(),
                "client_dynamic_config": h.client_dynamic_config.to_json(),
                "api_key": null,
            },
            "base_model": self.base_model,
            "record_stability_info": self.record_stability_info,
        });
        ENGINE.encode(v.to_string())
    }

    /// Reads a handle made by [`encode`](Self::encode) or by the Python SDK.
    pub fn decode(handle: &str) -> Result<Self, Error> {
        let bad = |why: String| -> Error {
            InputError::type_error(
                "handle",
                format!("is not a sampler handle (from getSamplerHandle): {why}"),
            )
            .into()
        };
        let bytes = ENGINE
            .decode(handle.trim())
            .map_err(|e| bad(format!("not URL-safe base64 ({e})")))?;
        let v = json::from_slice(&bytes).map_err(|e| bad(format!("{e}")))?;
        let empty = Map::new();
        let object = |v: Option<&'_ Value>, name: &str| -> Result<Map, Error> {
            match v {
                None | Some(Value::Null) => Ok(empty.clone()),
                Some(Value::Object(m)) => Ok(m.clone()),
                Some(other) => Err(bad(format!("`{name}` must be an object, got {other}"))),
            }
        };
        let text = |v: &Map, name: &str, path: &str| -> Result<String, Error> {
            match v.get(name).and_then(Value::as_str) {
                Some(s) if !s.is_empty() => Ok(s.to_string()),
                _ => Err(bad(format!("`{path}{name}` must be a non-empty string"))),
            }
        };
        fn config<T: FromJson>(m: &Map, name: &str) -> Result<T, String> {
            match m.get(name) {
                None => T::from_json(&Value::Object(Map::new())),
                Some(v) => T::from_json(v),
            }
        }
        let top = object(Some(&v), "handle")?;
        let session_id = text(&top, "session_id", "")?;
        let sampling_session_id = text(&top, "sampling_session_id", "")?;
        let base_model = text(&top, "base_model", "")?;
        let holder = object(top.get("holder"), "holder")?;
        let headers = object(
            holder.get("default_headers_overrides"),
            "holder.default_headers_overrides",
        )?;
        if let Some((name, _)) = headers.iter().find(|(_, v)| !v.is_string()) {
            return Err(bad(format!(
                "`holder.default_headers_overrides.{name}` must be a string"
            )));
        }
        let base_url = text(&holder, "base_url", "holder.")?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(bad(format!(
                "`holder.base_url` must be an http(s) URL, got {}",
                json::quote(&base_url)
            )));
        }
        Ok(SamplerHandle {
            session_id,
            sampling_session_id,
            holder: HandleHolder {
                base_url,
                default_headers_overrides: headers,
                client_config: config(&holder, "client_config")
                    .map_err(|e| bad(format!("`holder.client_config`: {e}")))?,
                client_dynamic_config: config(&holder, "client_dynamic_config")
                    .map_err(|e| bad(format!("`holder.client_dynamic_config`: {e}")))?,
                api_key: (),
            },
            base_model,
            record_stability_info: top
                .get("record_stability_info")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SamplerHandle {
        SamplerHandle {
            session_id: "sess".into(),
            sampling_session_id: "sess:sample:3".into(),
            holder: HandleHolder {
                base_url: "http://127.0.0.1:8080".into(),
                default_headers_overrides: [("x-team", Value::from("a"))].into_iter().collect(),
                client_config: ServerConfig {
                    sample_join_sampling_session: true,
                    ..Default::default()
                },
                client_dynamic_config: DynamicConfig::default(),
                api_key: (),
            },
            base_model: "Qwen/Qwen3-8B".into(),
            record_stability_info: true,
        }
    }

    #[test]
    fn round_trips_with_a_null_key() {
        let s = sample().encode();
        assert!(
            !s.contains('+') && !s.contains('/'),
            "URL-safe alphabet: {s}"
        );
        let raw = String::from_utf8(ENGINE.decode(&s).unwrap()).unwrap();
        assert!(
            raw.starts_with(r#"{"session_id":"sess","sampling_session_id":"sess:sample:3","holder":{"base_url":"#),
            "Python's field order, compact: {raw}"
        );
        assert!(raw.contains(r#","api_key":null},"#), "{raw}");
        assert_eq!(SamplerHandle::decode(&s).unwrap(), sample());
        // Without its padding, too.
        assert_eq!(
            SamplerHandle::decode(s.trim_end_matches('=')).unwrap(),
            sample()
        );
        // A key in a handle is never used.
        let keyed = raw.replace(r#""api_key":null"#, r#""api_key":"tml-secret""#);
        let back = SamplerHandle::decode(&ENGINE.encode(keyed)).unwrap();
        assert_eq!(back, sample());
        assert!(!back.encode().contains("tml-secret"));
    }

    #[test]
    fn bad_handles_name_the_problem() {
        for (input, needle) in [
            ("not base64!", "base64"),
            ("e30", "`session_id` must be a non-empty string"),
            ("WzFd", "`handle` must be an object"),
            (
                &ENGINE.encode(r#"{"session_id":"","sampling_session_id":"x","holder":{"base_url":"http://a","client_config":{},"client_dynamic_config":{}},"base_model":"m"}"#)[..],
                "`session_id` must be a non-empty string",
            ),
            (
                &ENGINE.encode(r#"{"session_id":"s","sampling_session_id":"x","holder":{"base_url":"ftp://a","client_config":{},"client_dynamic_config":{}},"base_model":"m"}"#)[..],
                "ftp://a",
            ),
            (
                &ENGINE.encode(r#"{"session_id":"s","sampling_session_id":"x","holder":{"base_url":"http://a","default_headers_overrides":{"x-n":1},"client_config":{},"client_dynamic_config":{}},"base_model":"m"}"#)[..],
                "`holder.default_headers_overrides.x-n` must be a string",
            ),
        ] {
            let e = SamplerHandle::decode(input).unwrap_err().to_string();
            assert!(e.contains("handle") && e.contains(needle), "{input}: {e}");
        }
    }
}
