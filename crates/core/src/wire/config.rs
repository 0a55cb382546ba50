//! What the server tells a client about itself: the flags `/api/v1/client/config` and
//! `/client/dynamic_config` answer, the protocol version this client speaks, and what
//! resuming a session takes. (What the caller configures is [`crate::options`].)

use crate::json;
use crate::json::{Fields, FromJson, Value};

/// The Python SDK version whose protocol this client speaks. It is what the server sees
/// as `sdk_version` (bodies) and `x-sdk-version` (header), so that it applies the
/// behaviour of that protocol; the client itself is named in `User-Agent`.
pub const PROTOCOL_SDK_VERSION: &str = "0.38.0";

/// Everything needed to resume a session in another process or request (edge
/// runtimes): its id and the next per-session counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    /// The session id.
    pub session_id: String,
    /// The next training-client number (`model_seq_id`).
    pub next_model_seq_id: u32,
    /// The next sampling-session number.
    pub next_sampling_session_seq_id: u32,
}

/// Server feature flags from `/api/v1/client/config` (unknown flags ignored; a missing
/// flag takes the Python SDK's default).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Exchange the credential for a short-lived JWT.
    pub pjwt_auth_enabled: bool,
    /// Credential source for the exchange.
    pub credential_default_source: String,
    /// Sampling dispatch byte budget.
    pub sample_dispatch_bytes_semaphore_size: i64,
    /// Byte budget for large result payloads.
    pub inflight_response_bytes_semaphore_size: i64,
    /// Submit forward/backward chunks concurrently.
    pub parallel_fwdbwd_chunks: bool,
    /// zstd-compress forward/backward bodies.
    pub proto_compress_fwdbwd: bool,
    /// Datums per forward/backward request.
    pub fwdbwd_max_chunk_len: usize,
    /// Estimated bytes per forward/backward request.
    pub fwdbwd_max_chunk_bytes_count: usize,
    /// Concurrent forward/backward bytes.
    pub fwdbwd_dispatch_bytes_semaphore_size: i64,
    /// How long HTTP 402 pauses before failing.
    pub billing_exception_max_pause_duration_sec: f64,
    /// Bypass the sampling retry layer.
    pub sample_no_retries: bool,
    /// Apply the sampling progress timeout.
    pub sample_enable_stuck_detection: bool,
    /// Concurrent samples per client.
    pub sample_max_concurrent_requests: usize,
    /// The Python SDK's transport choice: unused here, kept so that sampler handles
    /// carry the same flags as Python's.
    pub use_pyqwest_transport: bool,
    /// Poll sampling results session-wide through `retrieve_futures`.
    pub sample_use_retrieve_futures: bool,
    /// Custom losses run on the server.
    pub custom_loss_server_side: bool,
    /// Restored sampling clients join their session for a clone id.
    pub sample_join_sampling_session: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            pjwt_auth_enabled: false,
            credential_default_source: "api_key".into(),
            sample_dispatch_bytes_semaphore_size: 10_485_760,
            inflight_response_bytes_semaphore_size: 52_428_800,
            parallel_fwdbwd_chunks: true,
            proto_compress_fwdbwd: false,
            fwdbwd_max_chunk_len: 1024,
            fwdbwd_max_chunk_bytes_count: 5_000_000,
            fwdbwd_dispatch_bytes_semaphore_size: 50_000_000,
            billing_exception_max_pause_duration_sec: 3600.0,
            sample_no_retries: false,
            sample_enable_stuck_detection: true,
            sample_max_concurrent_requests: 2000,
            use_pyqwest_transport: true,
            sample_use_retrieve_futures: false,
            custom_loss_server_side: false,
            sample_join_sampling_session: false,
        }
    }
}

/// Whole numbers as JSON integers (the Python SDK's fields are `int`; sampler handles
/// carry them).
fn whole_as_int(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// A required-type flag: absent keeps the default; present must have the right type.
fn flag<T>(slot: &mut T, v: Result<Option<T>, String>) -> Result<(), String> {
    if let Some(x) = v? {
        *slot = x;
    }
    Ok(())
}

impl FromJson for ServerConfig {
    fn from_json(v: &Value) -> Result<Self, String> {
        let f = Fields::of(v)?;
        let mut c = ServerConfig::default();
        flag(&mut c.pjwt_auth_enabled, f.opt_bool("pjwt_auth_enabled"))?;
        flag(
            &mut c.credential_default_source,
            f.opt_str("credential_default_source"),
        )?;
        flag(
            &mut c.sample_dispatch_bytes_semaphore_size,
            f.opt_i64("sample_dispatch_bytes_semaphore_size"),
        )?;
        flag(
            &mut c.inflight_response_bytes_semaphore_size,
            f.opt_i64("inflight_response_bytes_semaphore_size"),
        )?;
        flag(
            &mut c.parallel_fwdbwd_chunks,
            f.opt_bool("parallel_fwdbwd_chunks"),
        )?;
        flag(
            &mut c.proto_compress_fwdbwd,
            f.opt_bool("proto_compress_fwdbwd"),
        )?;
        flag(
            &mut c.fwdbwd_max_chunk_len,
            f.opt_usize("fwdbwd_max_chunk_len"),
        )?;
        flag(
            &mut c.fwdbwd_max_chunk_bytes_count,
            f.opt_usize("fwdbwd_max_chunk_bytes_count"),
        )?;
        flag(
            &mut c.fwdbwd_dispatch_bytes_semaphore_size,
            f.opt_i64("fwdbwd_dispatch_bytes_semaphore_size"),
        )?;
        flag(
            &mut c.billing_exception_max_pause_duration_sec,
            f.opt_f64("billing_exception_max_pause_duration_sec"),
        )?;
        flag(&mut c.sample_no_retries, f.opt_bool("sample_no_retries"))?;
        flag(
            &mut c.sample_enable_stuck_detection,
            f.opt_bool("sample_enable_stuck_detection"),
        )?;
        flag(
            &mut c.sample_max_concurrent_requests,
            f.opt_usize("sample_max_concurrent_requests"),
        )?;
        flag(
            &mut c.use_pyqwest_transport,
            f.opt_bool("use_pyqwest_transport"),
        )?;
        flag(
            &mut c.sample_use_retrieve_futures,
            f.opt_bool("sample_use_retrieve_futures"),
        )?;
        flag(
            &mut c.custom_loss_server_side,
            f.opt_bool("custom_loss_server_side"),
        )?;
        flag(
            &mut c.sample_join_sampling_session,
            f.opt_bool("sample_join_sampling_session"),
        )?;
        Ok(c)
    }
}

impl ServerConfig {
    /// The flags as JSON, in the Python SDK's field order (sampler handles carry them).
    pub fn to_json(&self) -> Value {
        json!({
            "pjwt_auth_enabled": self.pjwt_auth_enabled,
            "credential_default_source": &self.credential_default_source,
            "sample_dispatch_bytes_semaphore_size": self.sample_dispatch_bytes_semaphore_size,
            "inflight_response_bytes_semaphore_size": self.inflight_response_bytes_semaphore_size,
            "parallel_fwdbwd_chunks": self.parallel_fwdbwd_chunks,
            "proto_compress_fwdbwd": self.proto_compress_fwdbwd,
            "fwdbwd_max_chunk_len": self.fwdbwd_max_chunk_len,
            "fwdbwd_max_chunk_bytes_count": self.fwdbwd_max_chunk_bytes_count,
            "fwdbwd_dispatch_bytes_semaphore_size": self.fwdbwd_dispatch_bytes_semaphore_size,
            "billing_exception_max_pause_duration_sec": whole_as_int(self.billing_exception_max_pause_duration_sec),
            "sample_no_retries": self.sample_no_retries,
            "sample_enable_stuck_detection": self.sample_enable_stuck_detection,
            "sample_max_concurrent_requests": self.sample_max_concurrent_requests,
            "use_pyqwest_transport": self.use_pyqwest_transport,
            "sample_use_retrieve_futures": self.sample_use_retrieve_futures,
            "custom_loss_server_side": self.custom_loss_server_side,
            "sample_join_sampling_session": self.sample_join_sampling_session,
        })
    }
}

/// Flags from `/api/v1/client/dynamic_config`, refreshed periodically.
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicConfig {
    /// Seconds between refreshes (at least 10).
    pub refresh_interval_sec: f64,
    /// Send `cancel_future` for abandoned samples.
    pub sample_cancel_enabled: bool,
    /// Cancels per batch.
    pub sample_cancel_max_batch_size: usize,
}

impl Default for DynamicConfig {
    fn default() -> Self {
        DynamicConfig {
            refresh_interval_sec: 300.0,
            sample_cancel_enabled: false,
            sample_cancel_max_batch_size: 64,
        }
    }
}

impl FromJson for DynamicConfig {
    fn from_json(v: &Value) -> Result<Self, String> {
        let f = Fields::of(v)?;
        let mut c = DynamicConfig::default();
        flag(
            &mut c.refresh_interval_sec,
            f.opt_f64("refresh_interval_sec"),
        )?;
        flag(
            &mut c.sample_cancel_enabled,
            f.opt_bool("sample_cancel_enabled"),
        )?;
        flag(
            &mut c.sample_cancel_max_batch_size,
            f.opt_usize("sample_cancel_max_batch_size"),
        )?;
        Ok(c)
    }
}

impl DynamicConfig {
    /// The flags as JSON (sampler handles carry them).
    pub fn to_json(&self) -> Value {
        json!({
            "refresh_interval_sec": whole_as_int(self.refresh_interval_sec),
            "sample_cancel_enabled": self.sample_cancel_enabled,
            "sample_cancel_max_batch_size": self.sample_cancel_max_batch_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_config_defaults_and_unknown_flags() {
        let c = ServerConfig::from_json(
            &json::from_str(r#"{"fwdbwd_max_chunk_len": 2, "something_new": 1}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(c.fwdbwd_max_chunk_len, 2);
        assert!(c.parallel_fwdbwd_chunks);
        assert_eq!(c.fwdbwd_max_chunk_bytes_count, 5_000_000);
        assert_eq!(ServerConfig::default().sample_max_concurrent_requests, 2000);
        assert_eq!(DynamicConfig::default().sample_cancel_max_batch_size, 64);
    }
}
