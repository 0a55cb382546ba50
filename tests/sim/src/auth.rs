//! Credentials: API keys and the HS256 JWTs issued by `/api/v1/auth/token`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Who is calling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// e.g. `tml:user:3f2a…`
    pub user_urn: String,
    pub org_id: String,
    pub email: String,
    /// Hash of the underlying API key (the JWT's `kid`), used for key revocation.
    pub key_hash: String,
    pub via_jwt: bool,
}

pub fn key_hash(key: &str) -> String {
    let d = Sha256::digest(key.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The identity an API key stands for (stable per key).
pub fn caller_for_key(key: &str) -> Caller {
    let h = key_hash(key);
    Caller {
        user_urn: format!("tml:user:{h}"),
        org_id: format!("org-{}", &h[..8]),
        email: format!("user-{}@tinker-sim.local", &h[..8]),
        key_hash: h,
        via_jwt: false,
    }
}

/// The org of a user URN minted by [`caller_for_key`] (None for other URNs).
pub fn org_of_user(urn: &str) -> Option<String> {
    let h = urn.strip_prefix("tml:user:")?;
    h.get(..8).map(|p| format!("org-{p}"))
}

pub struct Jwt {
    secret: Vec<u8>,
}

#[derive(Debug, PartialEq)]
pub enum JwtError {
    Malformed(String),
    BadSignature,
    Expired,
}

impl Jwt {
    pub fn new(seed: u64) -> Jwt {
        let mut h = Sha256::new();
        h.update(b"tinker-sim jwt secret");
        h.update(seed.to_le_bytes());
        Jwt {
            secret: h.finalize().to_vec(),
        }
    }

    fn sign(&self, msg: &str) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.secret).expect("hmac accepts any key length");
        mac.update(msg.as_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Issue a JWT for `caller`, valid for `ttl` seconds from `now`.
    pub fn issue(&self, caller: &Caller, now: i64, ttl: i64, jti: &str) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let claims = json!({
            "iss": "tinker-sim",
            "sub": caller.user_urn,
            "org_id": caller.org_id,
            "email": caller.email,
            "kid": caller.key_hash,
            "iat": now,
            "exp": now + ttl,
            "jti": jti,
        });
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let msg = format!("{header}.{payload}");
        let sig = self.sign(&msg);
        format!("{msg}.{sig}")
    }

    /// Verify a JWT we issued; returns its caller.
    pub fn verify(&self, token: &str, now: i64) -> Result<Caller, JwtError> {
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return Err(JwtError::Malformed(
                "a JWT has three dot-separated parts".into(),
            ));
        }
        let msg = format!("{}.{}", parts[0], parts[1]);
        let expected = self.sign(&msg);
        if expected.as_bytes() != parts[2].as_bytes() {
            return Err(JwtError::BadSignature);
        }
        let payload = URL_SAFE_NO_PAD
            .decode(parts[1])
            .map_err(|e| JwtError::Malformed(e.to_string()))?;
        let claims: Value =
            serde_json::from_slice(&payload).map_err(|e| JwtError::Malformed(e.to_string()))?;
        let exp = claims["exp"]
            .as_i64()
            .ok_or_else(|| JwtError::Malformed("no exp claim".into()))?;
        if exp <= now {
            return Err(JwtError::Expired);
        }
        Ok(Caller {
            user_urn: claims["sub"].as_str().unwrap_or_default().to_string(),
            org_id: claims["org_id"].as_str().unwrap_or_default().to_string(),
            email: claims["email"].as_str().unwrap_or_default().to_string(),
            key_hash: claims["kid"].as_str().unwrap_or_default().to_string(),
            via_jwt: true,
        })
    }
}

/// Whether a string looks like a JWT (so it is never written to logs).
pub fn looks_like_jwt(s: &str) -> bool {
    s.starts_with("eyJ") && s.matches('.').count() == 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_verify_expire_and_tamper() {
        let j = Jwt::new(1);
        let c = caller_for_key("tml-abc");
        let t = j.issue(&c, 1000, 60, "x");
        assert!(looks_like_jwt(&t));
        let back = j.verify(&t, 1010).unwrap();
        assert_eq!(back.user_urn, c.user_urn);
        assert!(back.via_jwt);
        assert_eq!(j.verify(&t, 1060), Err(JwtError::Expired));
        let mut bad = t.clone();
        bad.push('x');
        assert_eq!(j.verify(&bad, 1010), Err(JwtError::BadSignature));
        assert_eq!(Jwt::new(2).verify(&t, 1010), Err(JwtError::BadSignature));
        assert!(matches!(j.verify("a.b", 0), Err(JwtError::Malformed(_))));
        // Claims the SDK reads: exp, iat, sub, org_id.
        let claims: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(t.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            60
        );
        assert!(claims["org_id"].is_string() && claims["sub"].is_string());
    }
}
