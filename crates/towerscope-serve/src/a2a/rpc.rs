//! The JSON-RPC 2.0 envelope: parsing a request step by step, so that each kind of bad input
//! gets its own error code, and writing responses.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::error::RpcError;

/// A request that passed the envelope checks.
#[derive(Debug)]
pub(crate) struct RpcRequest {
    /// The id to answer with (`null` for a notification, which is still answered).
    pub(crate) id: Value,
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// Parses the body. On failure, returns the id to answer with (when one could be read) and the
/// error.
pub(crate) fn parse_request(body: &[u8]) -> Result<RpcRequest, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| (Value::Null, RpcError::parse_error(e)))?;
    let Value::Object(mut obj) = value else {
        let what = if value.is_array() {
            "batch requests are not supported; send one request object"
        } else {
            "a JSON-RPC request is a JSON object"
        };
        return Err((Value::Null, RpcError::invalid_request(what)));
    };
    let id = match obj.remove("id") {
        None | Some(Value::Null) => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` must be a string, a number or null"),
            ));
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("`jsonrpc` must be exactly \"2.0\"")));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => return Err((id, RpcError::invalid_request("`method` must be a non-empty string"))),
    };
    let params = obj.remove("params").unwrap_or_else(|| Value::Object(Map::new()));
    Ok(RpcRequest { id, method, params })
}

/// The method's parameters as `T`, or `-32602` naming what is wrong.
pub(crate) fn params<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

/// A success response.
pub(crate) fn result(id: &Value, result: impl serde::Serialize) -> Value {
    match serde_json::to_value(result) {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => {
            tracing::error!(error = %e, "an A2A result could not be encoded");
            error(id, &RpcError::internal())
        }
    }
}

/// An error response.
pub(crate) fn error(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> i64 {
        parse_request(body.as_bytes())
            .map(|_| 0)
            .unwrap_or_else(|(_, e)| e.code)
    }

    #[test]
    fn each_kind_of_bad_envelope_has_its_code() {
        assert_eq!(code("{not json"), RpcError::PARSE_ERROR);
        assert_eq!(code("[]"), RpcError::INVALID_REQUEST);
        assert_eq!(code("42"), RpcError::INVALID_REQUEST);
        assert_eq!(code(r#"{"id": 1, "method": "GetTask"}"#), RpcError::INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc": "2.0", "id": {}, "method": "GetTask"}"#),
            RpcError::INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc": "2.0", "id": 1, "method": 7}"#),
            RpcError::INVALID_REQUEST
        );
        assert_eq!(code(r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}"#), 0);
    }

    #[test]
    fn the_id_is_kept_for_the_error_answer() {
        let Err((id, _)) = parse_request(br#"{"jsonrpc": "1.0", "id": "a"}"#) else {
            panic!("a wrong version is refused");
        };
        assert_eq!(id, json!("a"));
    }
}
