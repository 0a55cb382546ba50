//! Errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}` with the
//! HTTP status OpenAI uses for them.

use serde_json::{json, Value as Json};

/// An error answered to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status (400 bad request, 404 unknown model or route, 429 backpressure, …).
    pub status: u16,
    /// OpenAI's `type` (`invalid_request_error`, `not_found_error`, …).
    pub kind: &'static str,
    /// The message.
    pub message: String,
    /// The request parameter at fault, when one is.
    pub param: Option<String>,
}

impl ApiError {
    /// A bad parameter: 400, naming it.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        let param = param.into();
        ApiError {
            status: 400,
            kind: "invalid_request_error",
            message: format!("{param}: {}", message.into()),
            param: Some(param),
        }
    }

    /// Something not found (a model, a route): 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            status: 404,
            kind: "not_found_error",
            message: message.into(),
            param: None,
        }
    }

    /// The body of the error response.
    pub fn json(&self) -> Json {
        json!({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": null}})
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_openai_shape_and_name_the_parameter() {
        let e = ApiError::invalid("temperature", "must be a number from 0 to 2, got \"hot\"");
        assert_eq!(e.status, 400);
        assert_eq!(
            e.json(),
            json!({"error": {"message": "temperature: must be a number from 0 to 2, got \"hot\"", "type": "invalid_request_error", "param": "temperature", "code": null}})
        );
        assert_eq!(
            ApiError::not_found("no model x").json()["error"]["param"],
            Json::Null
        );
    }
}
