use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use constant_time_eq::constant_time_eq_32;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::Error;

/// The shortest accepted HS256 secret: 256 bits, the size of the hash (RFC 7518 §3.2).
pub const MIN_SECRET_BYTES: usize = 32;
/// Clock skew tolerated on `exp` and `nbf`.
pub const DEFAULT_LEEWAY_SECONDS: i64 = 30;
/// Longer tokens are refused as malformed before any decoding.
pub const MAX_TOKEN_BYTES: usize = 8192;

/// A verifier of HS256 compact JWS tokens. Debug never prints the secret.
#[derive(Clone)]
pub struct Hs256 {
    secret: Vec<u8>,
    leeway: i64,
}

impl fmt::Debug for Hs256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hs256 {{ secret: ***, leeway: {} }}", self.leeway)
    }
}

fn mac(secret: &[u8], signing_input: &[u8]) -> [u8; 32] {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        unreachable!("HMAC-SHA256 accepts keys of any length")
    };
    mac.update(signing_input);
    mac.finalize().into_bytes().into()
}

fn decode_object(part: &str) -> Result<Map<String, Value>, Error> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| Error::MalformedToken)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Error::MalformedToken),
    }
}

/// A NumericDate claim: absent is `None`; present but not a number is malformed.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, Error> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_f64().map(Some).ok_or(Error::MalformedToken),
        Some(_) => Err(Error::MalformedToken),
    }
}

impl Hs256 {
    /// Fails with [`Error::WeakSecret`] when `secret` is shorter than [`MIN_SECRET_BYTES`].
    pub fn new(secret: impl AsRef<[u8]>) -> Result<Self, Error> {
        let secret = secret.as_ref();
        if secret.len() < MIN_SECRET_BYTES {
            return Err(Error::WeakSecret);
        }
        Ok(Hs256 {
            secret: secret.to_vec(),
            leeway: DEFAULT_LEEWAY_SECONDS,
        })
    }

    pub fn with_leeway(mut self, seconds: i64) -> Self {
        self.leeway = seconds.max(0);
        self
    }

    /// Verifies `token` at unix time `now` and returns its claims. Order: shape, `alg`
    /// allow-list, signature (constant time), then `exp`/`nbf`; the claims are not read before
    /// the signature is known to be good.
    pub fn verify(&self, token: &str, now: i64) -> Result<Map<String, Value>, Error> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Error::MalformedToken);
        }
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::MalformedToken);
        };
        let header_obj = decode_object(header)?;
        match header_obj.get("alg") {
            Some(Value::String(alg)) if alg == "HS256" => {}
            Some(Value::String(_)) => return Err(Error::UnsupportedAlgorithm),
            _ => return Err(Error::MalformedToken),
        }
        if header_obj.contains_key("crit") {
            return Err(Error::UnsupportedAlgorithm);
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| Error::MalformedToken)?;
        let signing_input = &token[..header.len() + 1 + payload.len()];
        let expected = mac(&self.secret, signing_input.as_bytes());
        let Ok(received) = <[u8; 32]>::try_from(signature.as_slice()) else {
            return Err(Error::BadSignature);
        };
        if !constant_time_eq_32(&expected, &received) {
            return Err(Error::BadSignature);
        }
        let claims = decode_object(payload)?;
        let now = now as f64;
        let leeway = self.leeway as f64;
        if numeric_date(&claims, "exp")?.is_some_and(|exp| now >= exp + leeway) {
            return Err(Error::Expired);
        }
        if numeric_date(&claims, "nbf")?.is_some_and(|nbf| now + leeway < nbf) {
            return Err(Error::NotYetValid);
        }
        Ok(claims)
    }
}

/// Signs `claims` (any JSON value; a JSON object for a valid token) as an HS256 compact JWS,
/// header `{"alg":"HS256","typ":"JWT"}`. The issuer's side, for tests and tools.
pub fn sign_hs256(claims: &Value, secret: &[u8]) -> String {
    sign_with_header(
        &serde_json::json!({"alg": "HS256", "typ": "JWT"}),
        claims,
        secret,
    )
}

/// Like [`sign_hs256`] with any header, HMAC-SHA256 signed whatever its `alg` says: for tests
/// of algorithm confusion (`none`, `RS256` headers over an HMAC signature).
pub fn sign_with_header(header: &Value, claims: &Value, secret: &[u8]) -> String {
    let header = URL_SAFE_NO_PAD.encode(header.to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let input = format!("{header}.{payload}");
    let signature = URL_SAFE_NO_PAD.encode(mac(secret, input.as_bytes()));
    format!("{input}.{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const NOW: i64 = 1_700_000_000;

    fn b64(v: &str) -> String {
        URL_SAFE_NO_PAD.encode(v)
    }

    fn with_header(header: &str, claims: &Value, secret: &[u8]) -> String {
        let header: Value = serde_json::from_str(header).unwrap();
        sign_with_header(&header, claims, secret)
    }

    fn verifier() -> Hs256 {
        Hs256::new(SECRET).unwrap()
    }

    #[test]
    fn matches_an_independent_implementation() {
        // Python: base64url(hmac.new(SECRET, b"<header>.<payload>", hashlib.sha256).digest())
        let expected = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.\
                        wvm6JJLIvt0yJ90RxqigjYXrn8cSJYBefBOhnTD7aDE";
        assert_eq!(sign_hs256(&json!({"sub": "1234567890"}), SECRET), expected);
        let claims = verifier().verify(expected, NOW).unwrap();
        assert_eq!(claims["sub"], "1234567890");
    }

    #[test]
    fn secrets_shorter_than_32_bytes_are_refused() {
        assert_eq!(Hs256::new(&SECRET[..31]).unwrap_err(), Error::WeakSecret);
        assert!(Hs256::new(SECRET).is_ok());
        assert!(!format!("{:?}", verifier()).contains("0123"));
    }

    #[test]
    fn other_algorithms_are_refused() {
        let claims = json!({"sub": "x"});
        for header in [
            r#"{"alg":"none"}"#,
            r#"{"alg":"RS256","typ":"JWT"}"#,
            r#"{"alg":"HS512"}"#,
            r#"{"alg":"hs256"}"#,
            r#"{"alg":"HS256","crit":["b64"]}"#,
        ] {
            let token = with_header(header, &claims, SECRET);
            assert_eq!(
                verifier().verify(&token, NOW),
                Err(Error::UnsupportedAlgorithm),
                "{header}"
            );
        }
        let unsigned = format!("{}.{}.", b64(r#"{"alg":"none"}"#), b64("{}"));
        assert_eq!(
            verifier().verify(&unsigned, NOW),
            Err(Error::UnsupportedAlgorithm)
        );
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let good = sign_hs256(&json!({"sub": "x"}), SECRET);
        let no_alg = with_header(r#"{"typ":"JWT"}"#, &json!({}), SECRET);
        let array_claims = with_header(r#"{"alg":"HS256"}"#, &json!([1]), SECRET);
        let text_exp = sign_hs256(&json!({"exp": "soon"}), SECRET);
        let padded = format!("{good}=");
        let long = "a".repeat(MAX_TOKEN_BYTES + 1);
        for token in [
            "",
            "abc",
            "a.b",
            "a.b.c.d",
            "!!.??.**",
            &format!("{good}.x"),
            &no_alg,
            &array_claims,
            &text_exp,
            &padded,
            &long,
        ] {
            assert_eq!(
                verifier().verify(token, NOW),
                Err(Error::MalformedToken),
                "{token}"
            );
        }
    }

    #[test]
    fn wrong_signatures_are_refused() {
        let token = sign_hs256(&json!({"sub": "x"}), b"another-secret-another-secret-xx");
        assert_eq!(verifier().verify(&token, NOW), Err(Error::BadSignature));
        let good = sign_hs256(&json!({"sub": "x"}), SECRET);
        let (input, _) = good.rsplit_once('.').unwrap();
        let short = format!("{input}.{}", b64("short"));
        assert_eq!(verifier().verify(&short, NOW), Err(Error::BadSignature));
        // A payload changed after signing.
        let (header, rest) = good.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        let forged = format!("{header}.{}.{sig}", b64(r#"{"sub":"admin"}"#));
        assert_eq!(verifier().verify(&forged, NOW), Err(Error::BadSignature));
    }

    #[test]
    fn exp_and_nbf_are_honoured_with_leeway() {
        let v = verifier();
        let exp = sign_hs256(&json!({"exp": NOW}), SECRET);
        assert!(v.verify(&exp, NOW + 29).is_ok());
        assert_eq!(v.verify(&exp, NOW + 30), Err(Error::Expired));
        let nbf = sign_hs256(&json!({"nbf": NOW}), SECRET);
        assert_eq!(v.verify(&nbf, NOW - 31), Err(Error::NotYetValid));
        assert!(v.verify(&nbf, NOW - 30).is_ok());
        let strict = verifier().with_leeway(0);
        assert_eq!(strict.verify(&exp, NOW), Err(Error::Expired));
        let fractional = sign_hs256(&json!({"exp": NOW as f64 + 0.5}), SECRET);
        assert!(strict.verify(&fractional, NOW).is_ok());
    }
}
