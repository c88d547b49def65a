//! One table per rule family: texts that must be redacted (with what they become), and near
//! misses that must come back borrowed, unchanged.

use super::*;

/// Checks the positives (`input`, `expected`) and the near misses of one family.
fn family(name: &str, positives: &[(&str, &str)], near_misses: &[&str]) {
    for (input, expected) in positives {
        let redacted = redact_text(input);
        assert_eq!(redacted, *expected, "{name}: {input}");
        assert_eq!(
            redact_text(&redacted),
            redacted,
            "{name}: redacting twice changes {input}"
        );
    }
    for text in near_misses {
        assert!(
            matches!(redact_text(text), Cow::Borrowed(_)),
            "{name}: {text} became {}",
            redact_text(text)
        );
    }
}

#[test]
fn openai_and_anthropic_keys() {
    family(
        "openai/anthropic",
        &[
            ("key sk-proj-ABCDEFGHIJKLMNOP1234", "key [REDACTED]"),
            ("sk-ant-api03-abcdefghijklmnopqrstu", "[REDACTED]"),
            ("sk-ant-admin01-abcdefgh_ij-KL", "[REDACTED]"),
            ("sk-svcacct-abcd1234efgh", "[REDACTED]"),
            ("use sk-abc123 for tests", "use [REDACTED] for tests"),
            ("short key: sk-Xy12ab.", "short key: [REDACTED]."),
            ("OPENAI_KEY=sk-abcdefghijklmnopqrstuvwxyz", "OPENAI_KEY=[REDACTED]"),
            ("(sk-1234567890abcdef)", "([REDACTED])"),
        ],
        &[
            "a task-list with sk-short",
            "we use sk-learn and sk-lite here",
            "ask-abc123 is not a key",
            "sk-ant- alone",
            "sk-proj-short",
        ],
    );
}

#[test]
fn aws_keys() {
    family(
        "aws",
        &[
            ("AKIAABCDEFGHIJKLMNOP is aws", "[REDACTED] is aws"),
            ("id=ASIA1234567890ABCDEF;", "id=[REDACTED];"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED]",
            ),
            (
                r#"{"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCY"}"#,
                r#"{"AWS_SECRET_ACCESS_KEY": "[REDACTED]"}"#,
            ),
        ],
        &[
            "AKIA is a prefix",
            "AKIAABCDEFGHIJKLMNO is one short",
            "AKIAABCDEFGHIJKLMNOPQ is one long",
            "AKIAabcdefghijklmnop is lower case",
            "aws_region=eu-west-1",
        ],
    );
}

#[test]
fn github_and_gitlab_tokens() {
    family(
        "github/gitlab",
        &[
            ("ghp_abcdefghijklmnopqrstuvwxyz0123", "[REDACTED]"),
            ("token gho_ABCDEFGHIJKLMNOPQRSTUVWX here", "token [REDACTED] here"),
            ("ghu_0123456789abcdefghij", "[REDACTED]"),
            ("ghs_0123456789abcdefghij,", "[REDACTED],"),
            ("ghr_0123456789abcdefghij", "[REDACTED]"),
            ("github_pat_11ABCDEFG0123456789_abcdefghij", "[REDACTED]"),
            ("glpat-abcdefghij0123456789", "[REDACTED]"),
            ("glpat-abcdefghij0123456789xyzab.01.0abcdefgh end.", "[REDACTED] end."),
            ("gldt-abcdefghij0123456789", "[REDACTED]"),
        ],
        &[
            "ghp_short",
            "see github_pat_ docs",
            "glpat-tooshort",
            "the ghost_in_the_machine",
        ],
    );
}

#[test]
fn slack_tokens() {
    family(
        "slack",
        &[
            ("xoxb-1234567890-abc", "[REDACTED]"),
            ("xoxp-1234567890-1234567890-abcdef", "[REDACTED]"),
            ("SLACK=xapp-1-A0123-456-abcdef", "SLACK=[REDACTED]"),
            ("xoxe-1-abcdefghijkl", "[REDACTED]"),
        ],
        &["xoxb-123", "xoxo is hugs and kisses", "xox-1234567890"],
    );
}

#[test]
fn stripe_keys() {
    family(
        "stripe",
        &[
            ("sk_live_abcdefghij0123456789", "[REDACTED]"),
            ("key: sk_test_4eC39HqLyjWDarjtT1zdp7dc", "key: [REDACTED]"),
            ("rk_live_0123456789AB", "[REDACTED]"),
            ("sk_prod_ABCDEFGHIJKL", "[REDACTED]"),
            ("whsec_abcdefghijklmnopqrstuvwxyz", "[REDACTED]"),
        ],
        &[
            "sk_live_short",
            "pk_live_abcdefghij0123456789 is publishable",
            "sk_other_abcdefghij0123456789",
        ],
    );
}

#[test]
fn google_hugging_face_and_perplexity_keys() {
    family(
        "google/hf/pplx",
        &[
            ("AIzaSyA-1234567890abcdefghijklmnopqrs", "[REDACTED]"),
            (
                "url?key=AIzaSyA-1234567890abcdefghijklmnopqrs&q=1",
                "url?key=[REDACTED]&q=1",
            ),
            ("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "[REDACTED]"),
            ("pplx-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP", "[REDACTED]"),
        ],
        &["AIzaShort", "hf_model_name", "pplx-short"],
    );
}

#[test]
fn jwts() {
    family(
        "jwt",
        &[
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "[REDACTED]",
            ),
            (
                "session=eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9. (unsigned)",
                "session=[REDACTED] (unsigned)",
            ),
            (
                "the jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig, then",
                "the jwt [REDACTED], then",
            ),
        ],
        &[
            "eyJhbGciOiJIUzI1NiJ9 without claims",
            "eyes.eyebrows.eyelids",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0 without a second dot",
        ],
    );
}

#[test]
fn bearer_tokens() {
    family(
        "bearer",
        &[
            (
                "Authorization: Bearer abc.def.ghi123",
                "Authorization: Bearer [REDACTED]",
            ),
            ("header bearer eyJhbGciOiJIUzI1NiJ9.x.y", "header bearer [REDACTED]"),
            (
                "curl -H 'Authorization: Bearer abc.123.xyz'",
                "curl -H 'Authorization: Bearer [REDACTED]'",
            ),
            ("Bearer abcdefghijklmnopqrstuvwxyz", "Bearer [REDACTED]"),
            ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]"),
            ("authorization=Token 0123456789", "authorization=Token [REDACTED]"),
        ],
        &[
            "The bearer of bad news",
            "bearer instruments",
            "Bearer",
            "a bearer bond",
        ],
    );
}

#[test]
fn private_key_blocks() {
    let rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd==\n-----END RSA PRIVATE KEY-----";
    let pgp = "key: -----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----\nbye";
    family(
        "private key",
        &[
            (
                rsa,
                "-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----",
            ),
            (
                "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
                "-----BEGIN PRIVATE KEY-----[REDACTED]",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                "-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]-----END OPENSSH PRIVATE KEY-----",
            ),
            (
                pgp,
                "key: -----BEGIN PGP PRIVATE KEY BLOCK-----[REDACTED]-----END PGP PRIVATE KEY BLOCK-----\nbye",
            ),
        ],
        &[
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "-----BEGIN PRIVATE KEY-----",
            "-----BEGIN private key-----\nabc",
        ],
    );
}

#[test]
fn credential_key_assignments() {
    family(
        "key=value",
        &[
            ("url?api_key=s3cr3t&city=Paris", "url?api_key=[REDACTED]&city=Paris"),
            (r#"{"password": "hunter2"}"#, r#"{"password": "[REDACTED]"}"#),
            (r#"{"password": "hunter two"}"#, r#"{"password": "[REDACTED]"}"#),
            ("token=abc123, next", "token=[REDACTED], next"),
            ("secret: 'a b c'", "secret: '[REDACTED]'"),
            ("client_secret := x9y8z7", "client_secret := [REDACTED]"),
            ("'x-api-key' => 'k-123'", "'x-api-key' => '[REDACTED]'"),
            ("export GITHUB_TOKEN=abc123def", "export GITHUB_TOKEN=[REDACTED]"),
            ("Cookie: session=abc123; other=1", "Cookie: [REDACTED]"),
            ("auth: hunter2.", "auth: [REDACTED]."),
        ],
        &[
            "max_tokens: 100",
            "tokens=5",
            "author: Jane",
            "the key: press enter",
            "Token: the smallest unit of text",
            "password: required",
            "api_key: none",
            r#"{"token": {"kind": "x"}}"#,
            "token == value",
            "auth::Token is a type",
            "password=",
            "password: [REDACTED]",
        ],
    );
}

/// A signed URL's signature is its credential (an object readable by whoever reads the trace
/// until it expires): redacted, the rest of the URL kept.
#[test]
fn signatures_of_signed_urls() {
    family(
        "signed url",
        &[
            (
                "https://acct.blob.core.windows.net/c/cat.png?sv=2022-11-02&sp=r&sig=Zm9vYmFyYmF6cXV4c2VjcmV0%3D",
                "https://acct.blob.core.windows.net/c/cat.png?sv=2022-11-02&sp=r&sig=[REDACTED]",
            ),
            (
                "https://bucket.s3.amazonaws.com/cat.png?X-Amz-Expires=604800&X-Amz-Signature=fe5f80f77d5fa3beca038a24&x=1",
                "https://bucket.s3.amazonaws.com/cat.png?X-Amz-Expires=604800&X-Amz-Signature=[REDACTED]&x=1",
            ),
            (
                "https://storage.googleapis.com/b/o?X-Goog-Signature=0a1b2c3d4e5f",
                "https://storage.googleapis.com/b/o?X-Goog-Signature=[REDACTED]",
            ),
        ],
        &[
            "https://example.com/sign-in?next=/home",
            "a signed letter",
            // A signature elsewhere is no secret: code, an email's, a thinking block's.
            "sig = inspect.signature(func)",
            "sig := make(chan os.Signal, 1)",
            "def verify(data: bytes, signature: str) -> bool:",
            "let sig: Signature = key.sign(msg);",
            r#"{"type": "thinking", "signature": "EqQBCkgIARABGAIiQ"}"#,
        ],
    );
}

#[test]
fn passwords_in_urls() {
    family(
        "url",
        &[
            ("https://user:pw@host/path", "https://user:[REDACTED]@host/path"),
            (
                "postgres://app:s3cr3t@db.internal:5432/app?sslmode=require",
                "postgres://app:[REDACTED]@db.internal:5432/app?sslmode=require",
            ),
            (
                "clone https://x-access-token:abc123@github.com/o/r.git",
                "clone https://x-access-token:[REDACTED]@github.com/o/r.git",
            ),
            ("redis://:p4ss@cache:6379", "redis://:[REDACTED]@cache:6379"),
        ],
        &[
            "https://host:8080/path",
            "https://user@host/path",
            "https://host/path?email=a@b.c",
            "mailto:someone@example.com",
            "see https://example.com/a:b@c",
            "a://",
        ],
    );
}

#[test]
fn passwords_in_prose() {
    family(
        "prose",
        &[
            ("my password is hunter2", "my password is [REDACTED]"),
            ("Password is hunter2.", "Password is [REDACTED]."),
            (
                "the passphrase was \"correct horse\"",
                "the passphrase was \"[REDACTED]\"",
            ),
            ("password: Tr0ub4dor&3", "password: [REDACTED]"),
            ("password=swordfish!", "password=[REDACTED]"),
            ("my password is   Passw0rd!", "my password is   [REDACTED]"),
        ],
        &[
            "the password is incorrect",
            "Password is required.",
            "your password is too short",
            "password isn't set",
            "the password is",
            "password reset link",
            "passwords are hashed",
        ],
    );
}

#[test]
fn ordinary_text_is_borrowed() {
    for text in [
        "The bearer of bad news",
        "max_tokens: 100",
        "a task-list with sk-short",
        "It is sunny in Paris, 21 °C.",
        "Pässwörter sind geheim",
        "1 + 2 = 3, 3 + 4 = 7 and 5 + 6 = 11.",
        "Each eye sees; every key opens a door: that's the task.",
        "",
    ] {
        assert!(matches!(redact_text(text), Cow::Borrowed(_)), "{text}");
    }
}

#[test]
fn several_credentials_in_one_text() {
    let text = "a=1 token=abc123 then sk-abcdefghijklmnop1234 and https://u:p4ss@h/ end";
    assert_eq!(
        redact_text(text),
        "a=1 token=[REDACTED] then [REDACTED] and https://u:[REDACTED]@h/ end"
    );
}

#[test]
fn odd_text_never_panics() {
    let fragments = [
        "password: ",
        "password is ",
        "\"",
        "'é",
        "\\",
        "ü",
        "token=",
        "https://",
        "ü:ö@",
        "-----BEGIN PRIVATE KEY-----",
        "-----END",
        "ey",
        "eyJhbGciOiJIUzI1NiJ9.",
        "sk-",
        "AKIA",
        "Bearer ",
        "{\"api_key\": ",
        "[",
        "\n",
        "☀",
    ];
    for a in fragments {
        for b in fragments {
            for c in fragments {
                let text = format!("{a}{b}{c}");
                let _ = redact_text(&text);
                redact_value(&mut serde_json::Value::String(text));
            }
        }
    }
}

/// Plural keys name credentials too: `secrets`, `api_keys`, `apiKeys`, `APIKEYS`.
#[test]
fn plural_credential_keys() {
    use super::is_sensitive_key;
    for key in [
        "secrets",
        "api_keys",
        "apiKeys",
        "APIKEYS",
        "private_keys",
        "access-keys",
    ] {
        assert!(is_sensitive_key(key), "{key}");
    }
    for key in ["keys", "monkeys", "tokens_used", "secretary"] {
        assert!(!is_sensitive_key(key), "{key}");
    }
    let mut value = serde_json::json!({"secrets": {"db": "hunter2"}, "api_keys": ["k-123"], "apiKeys": "k-456"});
    redact_value(&mut value);
    let text = value.to_string();
    for secret in ["hunter2", "k-123", "k-456"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}
