//! OTLP export in one call: [`init_otlp`] installs a tracer provider (batch span processor) and a
//! meter provider (periodic reader) exporting to an OpenTelemetry collector, and returns an
//! [`OtlpGuard`] that flushes and shuts them down.
//!
//! The transport is OTLP over HTTP with protobuf bodies (the `reqwest` blocking client, which
//! needs no async runtime), or gRPC with the `grpc` cargo feature. Where it sends, in order of
//! precedence:
//!
//! 1. [`OtlpConfig::endpoint`] (a base URL such as `http://127.0.0.1:4318`; `/v1/traces` and
//!    `/v1/metrics` are appended for HTTP);
//! 2. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` (full URLs);
//! 3. `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL);
//! 4. `http://localhost:4318` (HTTP) or `http://localhost:4317` (gRPC).
//!
//! The protocol is [`OtlpConfig::protocol`], else `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`
//! or `grpc`), else HTTP/protobuf. Headers and timeouts honour the other standard
//! `OTEL_EXPORTER_OTLP_*` variables, and the service name `OTEL_SERVICE_NAME` when
//! [`OtlpConfig::service_name`] is not set. `init_otlp` refuses, with an error saying which
//! feature is missing, what this build cannot send: compression
//! (`OTEL_EXPORTER_OTLP_COMPRESSION=gzip`) needs the `gzip` feature (HTTP/protobuf only), and an
//! `https://` endpoint over HTTP/protobuf the `tls` feature (rustls). `init_otlp` installs
//! rustls' `ring` provider as the process default when none is installed: an application with
//! a provider of its own installs it before.
//!
//! # Shutting down
//!
//! The SDK's shutdown blocks until the last batch is exported. The guard runs it on a separate
//! thread and joins it, so dropping the guard at the end of `#[tokio::main]` does not block the
//! runtime's own export machinery. (With the `grpc` feature the exporter runs on the tokio
//! runtime: drop the guard on a multi-thread runtime, or outside the runtime.)
//!
//! # Example
//!
//! ```no_run
//! use towerscope_otel::{OtlpConfig, TracingMiddleware, init_otlp};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let guard = init_otlp(OtlpConfig::default().service_name("weather-bot").endpoint("http://127.0.0.1:4318"))?;
//! let tracing = TracingMiddleware::new(); // records with the providers just installed
//! // ... build agents with `.middleware(tracing.clone())` and run them ...
//! guard.shutdown()?; // or let it drop
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::provider;

/// The wire protocol of the exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// OTLP over HTTP, protobuf bodies (port 4318).
    HttpProtobuf,
    /// OTLP over gRPC (port 4317); needs the `grpc` cargo feature and a tokio runtime.
    Grpc,
}

/// What [`init_otlp`] sets up. Every field has a default; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    service_name: Option<String>,
    endpoint: Option<String>,
    protocol: Option<Protocol>,
    timeout: Option<Duration>,
    traces: bool,
    metrics: bool,
    metric_interval: Option<Duration>,
    resource: Vec<KeyValue>,
    install_global: bool,
}

impl Default for OtlpConfig {
    fn default() -> Self {
        Self {
            service_name: None,
            endpoint: None,
            protocol: None,
            timeout: None,
            traces: true,
            metrics: true,
            metric_interval: None,
            resource: Vec::new(),
            install_global: true,
        }
    }
}

impl OtlpConfig {
    /// The `service.name` resource attribute (default: `OTEL_SERVICE_NAME`, else the SDK's
    /// `unknown_service`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// The collector's base URL, such as `http://127.0.0.1:4318`; wins over the environment.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The protocol; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// The export timeout (default: `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether to export traces (default `true`).
    pub fn traces(mut self, on: bool) -> Self {
        self.traces = on;
        self
    }

    /// Whether to export metrics (default `true`).
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// How often metrics are exported (default: `OTEL_METRIC_EXPORT_INTERVAL`, else 60 s); they
    /// are also exported when the guard shuts down.
    pub fn metric_export_interval(mut self, interval: Duration) -> Self {
        self.metric_interval = Some(interval);
        self
    }

    /// Adds a resource attribute (`deployment.environment.name`, `service.version`, ...).
    pub fn resource_attribute(mut self, key: &'static str, value: impl Into<opentelemetry::Value>) -> Self {
        self.resource.push(KeyValue::new(key, value));
        self
    }

    /// Whether to install the providers for the whole process (default `true`): as the
    /// OpenTelemetry global providers and for [`TracingMiddleware::new`](crate::TracingMiddleware::new).
    /// Without it, hand [`OtlpGuard::tracer_provider`] to the middleware's builder.
    pub fn install_global(mut self, on: bool) -> Self {
        self.install_global = on;
        self
    }

    fn resolved_protocol(&self) -> Result<Protocol, OtlpError> {
        if let Some(protocol) = self.protocol {
            return Ok(protocol);
        }
        match std::env::var(opentelemetry_otlp::OTEL_EXPORTER_OTLP_PROTOCOL) {
            Err(_) => Ok(Protocol::HttpProtobuf),
            Ok(value) => match value.trim() {
                "" | "http/protobuf" => Ok(Protocol::HttpProtobuf),
                "grpc" => Ok(Protocol::Grpc),
                other => Err(OtlpError::new(format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported; use http/protobuf, or grpc with the `grpc` feature"
                ))),
            },
        }
    }

    /// The endpoint of one signal (`traces` or `metrics`), if set in the config.
    fn signal_endpoint(&self, protocol: Protocol, signal: &str) -> Option<String> {
        let base = self.endpoint.as_deref()?.trim_end_matches('/');
        Some(match protocol {
            Protocol::HttpProtobuf => format!("{base}/v1/{signal}"),
            Protocol::Grpc => base.to_owned(),
        })
    }
}

/// Why [`init_otlp`] or a shutdown failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpError {
    message: String,
}

impl OtlpError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OtlpError {}

/// Installs OTLP export of traces and metrics; see the [module docs](self).
///
/// Fails when the configuration is invalid (a malformed endpoint, an unsupported protocol, gRPC
/// without the `grpc` feature); never because the collector is unreachable (exports retry, then
/// drop, in the background).
pub fn init_otlp(config: OtlpConfig) -> Result<OtlpGuard, OtlpError> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // reqwest built with TLS but no provider (by `tls`, or by another crate of the build)
        // panics when a client is built; an error here only means another thread installed one
        // meanwhile, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let protocol = config.resolved_protocol()?;
    check_transport(&config, protocol, |name| std::env::var(name).ok())?;
    let mut resource = Resource::builder().with_attributes(config.resource.iter().cloned());
    if let Some(name) = &config.service_name {
        resource = resource.with_service_name(name.clone());
    }
    let resource = resource.build();

    let tracer_provider = match config.traces {
        false => None,
        true => {
            let exporter = span_exporter(&config, protocol)?;
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build(),
            )
        }
    };
    let meter_provider = match config.metrics {
        false => None,
        true => {
            let exporter = metric_exporter(&config, protocol)?;
            let mut reader = PeriodicReader::builder(exporter);
            if let Some(interval) = config.metric_interval {
                reader = reader.with_interval(interval);
            }
            Some(
                SdkMeterProvider::builder()
                    .with_reader(reader.build())
                    .with_resource(resource)
                    .build(),
            )
        }
    };
    let generation = config
        .install_global
        .then(|| provider::install(tracer_provider.clone(), meter_provider.clone()));
    Ok(OtlpGuard {
        tracer_provider,
        meter_provider,
        generation,
    })
}

fn build_error(what: &str, err: impl fmt::Display) -> OtlpError {
    OtlpError::new(format!("could not build the OTLP {what} exporter: {err}"))
}

#[cfg(not(feature = "grpc"))]
fn grpc_disabled() -> OtlpError {
    OtlpError::new("OTLP over gRPC needs the `grpc` feature of towerscope-otel; or use Protocol::HttpProtobuf")
}

/// What this build can send: each exported signal's compression (its own variable, else the
/// general one, case-insensitive, as the exporter reads them) and, over HTTP/protobuf, whether
/// its endpoint is `https://`. Refused here, clearly, what the exporter would only warn about
/// in its log (and send uncompressed) or fail at every export without connecting.
fn check_transport(
    config: &OtlpConfig,
    protocol: Protocol,
    var: impl Fn(&str) -> Option<String>,
) -> Result<(), OtlpError> {
    let signals: &[&str] = if config.metrics {
        &["TRACES", "METRICS"]
    } else {
        &["TRACES"]
    };
    for signal in signals {
        let own = format!("OTEL_EXPORTER_OTLP_{signal}_COMPRESSION");
        let compression = match var(&own) {
            Some(value) => Some((own, value)),
            None => var("OTEL_EXPORTER_OTLP_COMPRESSION").map(|v| ("OTEL_EXPORTER_OTLP_COMPRESSION".to_owned(), v)),
        };
        let (name, value) = compression.unwrap_or_default();
        match value.to_ascii_lowercase().as_str() {
            "" | "none" => {}
            "gzip" if protocol == Protocol::Grpc => {
                return Err(OtlpError::new(format!(
                    "{name}=gzip: this build compresses HTTP/protobuf exports only; use http/protobuf, or unset it"
                )));
            }
            "gzip" if cfg!(feature = "gzip") => {}
            "gzip" => {
                return Err(OtlpError::new(format!(
                    "{name}=gzip needs towerscope-otel's `gzip` feature (or unset it to export uncompressed)"
                )));
            }
            _ => {
                return Err(OtlpError::new(format!(
                    "{name}={value:?} is not a compression this exporter does (`gzip`, with the `gzip` feature, or `none`)"
                )));
            }
        }
        if protocol == Protocol::HttpProtobuf && !cfg!(feature = "tls") {
            let endpoint = config
                .endpoint
                .clone()
                .or_else(|| var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")))
                .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
            if endpoint.is_some_and(|e| e.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"))) {
                return Err(OtlpError::new(
                    "an https:// endpoint needs towerscope-otel's `tls` feature (the facade's `otel-tls`)",
                ));
            }
        }
    }
    Ok(())
}

/// The endpoint and timeout of `config`, on any exporter builder.
fn configured<B: WithExportConfig>(mut builder: B, endpoint: Option<String>, config: &OtlpConfig) -> B {
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(timeout) = config.timeout {
        builder = builder.with_timeout(timeout);
    }
    builder
}

fn span_exporter(config: &OtlpConfig, protocol: Protocol) -> Result<SpanExporter, OtlpError> {
    let endpoint = config.signal_endpoint(protocol, "traces");
    let built = match protocol {
        Protocol::HttpProtobuf => configured(
            SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary),
            endpoint,
            config,
        )
        .build(),
        #[cfg(feature = "grpc")]
        Protocol::Grpc => configured(SpanExporter::builder().with_tonic(), endpoint, config).build(),
        #[cfg(not(feature = "grpc"))]
        Protocol::Grpc => return Err(grpc_disabled()),
    };
    built.map_err(|e| build_error("span", e))
}

fn metric_exporter(config: &OtlpConfig, protocol: Protocol) -> Result<MetricExporter, OtlpError> {
    let endpoint = config.signal_endpoint(protocol, "metrics");
    let built = match protocol {
        Protocol::HttpProtobuf => configured(
            MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary),
            endpoint,
            config,
        )
        .build(),
        #[cfg(feature = "grpc")]
        Protocol::Grpc => configured(MetricExporter::builder().with_tonic(), endpoint, config).build(),
        #[cfg(not(feature = "grpc"))]
        Protocol::Grpc => return Err(grpc_disabled()),
    };
    built.map_err(|e| build_error("metric", e))
}

/// Owns the providers [`init_otlp`] installed. [`shutdown`](Self::shutdown), or dropping it,
/// exports what is buffered and shuts them down, on a separate thread that is joined; middleware
/// without explicit providers then passes straight through again.
#[must_use = "dropping the guard shuts the exporters down at once"]
pub struct OtlpGuard {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    generation: Option<u64>,
}

impl fmt::Debug for OtlpGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtlpGuard")
            .field("traces", &self.tracer_provider.is_some())
            .field("metrics", &self.meter_provider.is_some())
            .finish()
    }
}

impl OtlpGuard {
    /// The tracer provider (for [`TracingMiddlewareBuilder::tracer_provider`](crate::TracingMiddlewareBuilder::tracer_provider)).
    pub fn tracer_provider(&self) -> Option<&SdkTracerProvider> {
        self.tracer_provider.as_ref()
    }

    /// The meter provider.
    pub fn meter_provider(&self) -> Option<&SdkMeterProvider> {
        self.meter_provider.as_ref()
    }

    /// Exports everything buffered now, waiting for it (on a separate thread).
    pub fn force_flush(&self) -> Result<(), OtlpError> {
        let tracer = self.tracer_provider.clone();
        let meter = self.meter_provider.clone();
        off_thread(move || {
            let mut errors = Vec::new();
            if let Some(p) = tracer {
                p.force_flush().map_err(|e| errors.push(format!("traces: {e}"))).ok();
            }
            if let Some(p) = meter {
                p.force_flush().map_err(|e| errors.push(format!("metrics: {e}"))).ok();
            }
            errors
        })
    }

    /// Exports everything buffered and shuts the providers down (on a separate thread, joined).
    pub fn shutdown(mut self) -> Result<(), OtlpError> {
        self.shutdown_now()
    }

    fn shutdown_now(&mut self) -> Result<(), OtlpError> {
        if let Some(generation) = self.generation.take() {
            provider::clear_if_current(generation);
        }
        let tracer = self.tracer_provider.take();
        let meter = self.meter_provider.take();
        if tracer.is_none() && meter.is_none() {
            return Ok(());
        }
        off_thread(move || {
            let mut errors = Vec::new();
            if let Some(p) = tracer {
                p.shutdown().map_err(|e| errors.push(format!("traces: {e}"))).ok();
            }
            if let Some(p) = meter {
                p.shutdown().map_err(|e| errors.push(format!("metrics: {e}"))).ok();
            }
            errors
        })
    }
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        // Nobody to report to: the errors are the SDK's (it logs them itself).
        let _ = self.shutdown_now();
    }
}

/// Runs a blocking SDK call on its own thread and joins it.
fn off_thread(work: impl FnOnce() -> Vec<String> + Send + 'static) -> Result<(), OtlpError> {
    let errors = std::thread::Builder::new()
        .name("towerscope-otel-shutdown".into())
        .spawn(work)
        .map_err(|e| OtlpError::new(format!("could not start the OTLP shutdown thread: {e}")))?
        .join()
        .map_err(|_| OtlpError::new("the OTLP shutdown thread panicked"))?;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(OtlpError::new(format!("OTLP shutdown failed: {}", errors.join("; "))))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_per_signal() {
        let config = OtlpConfig::default().endpoint("http://127.0.0.1:4318/");
        assert_eq!(
            config.signal_endpoint(Protocol::HttpProtobuf, "traces").as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            config.signal_endpoint(Protocol::Grpc, "metrics").as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert_eq!(
            OtlpConfig::default().signal_endpoint(Protocol::HttpProtobuf, "traces"),
            None
        );
    }

    /// A compression or an endpoint this build cannot do is refused, not warned about in the
    /// exporter's log (or failed at every export); the variables are read as the exporter reads
    /// them: a signal's own over the general one, case-insensitive.
    #[test]
    fn what_this_build_cannot_send_is_refused() {
        let check = |config: &OtlpConfig, protocol, vars: &'static [(&'static str, &'static str)]| {
            check_transport(config, protocol, move |name| {
                vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
            })
        };
        let http = Protocol::HttpProtobuf;
        let config = OtlpConfig::default();
        for vars in [
            &[("OTEL_EXPORTER_OTLP_COMPRESSION", "none")][..],
            &[("OTEL_EXPORTER_OTLP_COMPRESSION", "NONE")],
            &[
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
                ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none"),
                ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "None"),
            ],
        ] {
            assert!(check(&config, http, vars).is_ok(), "{vars:?}");
        }
        let zstd = check(&config, http, &[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd")]).unwrap_err();
        assert!(
            zstd.to_string().contains("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"),
            "{zstd}"
        );
        let gzip = check(&config, http, &[("OTEL_EXPORTER_OTLP_COMPRESSION", "GZIP")]);
        if cfg!(feature = "gzip") {
            assert!(gzip.is_ok(), "{gzip:?}");
        } else {
            assert!(gzip.unwrap_err().to_string().contains("`gzip` feature"));
        }
        let grpc = check(&config, Protocol::Grpc, &[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")]);
        assert!(grpc.unwrap_err().to_string().contains("HTTP/protobuf exports only"));
        let https = OtlpConfig::default().endpoint("HTTPS://collector.example:4318");
        for (config, vars) in [
            (&https, &[][..]),
            (
                &config,
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example")][..],
            ),
            (
                &config,
                &[(
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "https://collector.example/v1/traces",
                )][..],
            ),
        ] {
            let checked = check(config, http, vars);
            if cfg!(feature = "tls") {
                assert!(checked.is_ok(), "{checked:?}");
            } else {
                assert!(checked.unwrap_err().to_string().contains("`tls` feature"));
            }
        }
        assert!(check(&OtlpConfig::default().endpoint("http://127.0.0.1:4318"), http, &[]).is_ok());
    }

    #[cfg(not(feature = "grpc"))]
    #[test]
    fn grpc_without_the_feature_is_a_clear_error() {
        let err = init_otlp(OtlpConfig::default().protocol(Protocol::Grpc).install_global(false)).unwrap_err();
        assert!(err.to_string().contains("`grpc` feature"), "{err}");
    }
}
