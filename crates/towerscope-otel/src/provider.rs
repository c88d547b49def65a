//! Where the middleware gets its tracer and meter: providers given to its builder, or the
//! providers installed for the whole process with [`set_tracer_provider`] /
//! [`set_meter_provider`] (which [`init_otlp`](crate::init_otlp) calls).
//!
//! # Why not `opentelemetry::global` alone
//!
//! With no provider, the middleware must cost nothing: no span objects, no attribute work, a
//! direct call of the inner service. opentelemetry 0.33 offers no way to ask its global provider
//! whether it is the no-op one: the only test is to build a tracer (a boxed allocation) and a
//! span (another) and ask `is_recording()`, on every call. So this crate keeps its own
//! process-wide slot next to the OTel global one, and the functions below fill both. A call then
//! checks one atomic flag; when it is off, the middleware calls the inner service and returns its
//! future untouched.
//!
//! A provider installed only with `opentelemetry::global::set_tracer_provider` is therefore not
//! seen: install it with [`set_tracer_provider`] instead, or give it to the builder
//! ([`TracingMiddlewareBuilder::tracer_provider`](crate::TracingMiddlewareBuilder::tracer_provider)).
//!
//! # Example
//!
//! ```
//! use opentelemetry_sdk::trace::SdkTracerProvider;
//!
//! assert!(!towerscope_otel::tracing_installed());
//! towerscope_otel::set_tracer_provider(SdkTracerProvider::builder().build());
//! assert!(towerscope_otel::tracing_installed());
//! towerscope_otel::clear_providers();
//! assert!(!towerscope_otel::tracing_installed());
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use opentelemetry::InstrumentationScope;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use crate::metrics::GenAiMetrics;
use crate::semconv::SCHEMA_URL;

/// The instrumentation scope of every span and metric: `towerscope`, this crate's version.
pub(crate) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("towerscope")
        .with_version(env!("CARGO_PKG_VERSION"))
        .with_schema_url(SCHEMA_URL)
        .build()
}

/// What a traced call records with: a tracer, a set of GenAI instruments, or both.
pub(crate) struct Instruments {
    pub(crate) tracer: Option<SdkTracer>,
    pub(crate) metrics: Option<GenAiMetrics>,
}

impl Instruments {
    pub(crate) fn new(tracer: Option<&SdkTracerProvider>, meter: Option<&SdkMeterProvider>) -> Option<Arc<Self>> {
        if tracer.is_none() && meter.is_none() {
            return None;
        }
        Some(Arc::new(Self {
            tracer: tracer.map(|p| p.tracer_with_scope(scope())),
            metrics: meter.map(|p| GenAiMetrics::new(&p.meter_with_scope(scope()))),
        }))
    }
}

impl fmt::Debug for Instruments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instruments")
            .field("tracer", &self.tracer.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// Where a middleware gets its instruments.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// Providers given to the builder (`None`: both were absent, so nothing is recorded).
    Explicit(Option<Arc<Instruments>>),
    /// The process-wide providers, looked up on every call.
    Global,
}

impl Source {
    /// The instruments of this call; `None` means pass straight through.
    #[inline]
    pub(crate) fn current(&self) -> Option<Arc<Instruments>> {
        match self {
            Self::Explicit(instruments) => instruments.clone(),
            Self::Global => global_instruments(),
        }
    }
}

/// Whether the process-wide slot holds anything (checked before any lock is taken).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Bumped on every change, so a guard only clears what it installed.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static INSTRUMENTS: RwLock<Option<Arc<Instruments>>> = RwLock::new(None);
static PROVIDERS: Mutex<Slot> = Mutex::new((None, None));

#[inline]
fn global_instruments() -> Option<Arc<Instruments>> {
    if !INSTALLED.load(Ordering::Acquire) {
        return None;
    }
    INSTRUMENTS.read().unwrap_or_else(PoisonError::into_inner).clone()
}

type Slot = (Option<SdkTracerProvider>, Option<SdkMeterProvider>);

/// Rebuilds the instruments from the stored providers; returns the new generation.
fn update(change: impl FnOnce(&mut Slot) -> bool) -> u64 {
    let mut providers = PROVIDERS.lock().unwrap_or_else(PoisonError::into_inner);
    if !change(&mut providers) {
        return GENERATION.load(Ordering::Acquire);
    }
    let instruments = Instruments::new(providers.0.as_ref(), providers.1.as_ref());
    let installed = instruments.is_some();
    *INSTRUMENTS.write().unwrap_or_else(PoisonError::into_inner) = instruments;
    INSTALLED.store(installed, Ordering::Release);
    GENERATION.fetch_add(1, Ordering::AcqRel) + 1
}

/// Installs `provider` for the whole process: for every [`TracingMiddleware`](crate::TracingMiddleware)
/// built without an explicit provider, and as the OpenTelemetry global tracer provider.
pub fn set_tracer_provider(provider: SdkTracerProvider) {
    install(Some(provider), None);
}

/// Installs `provider` for the whole process: GenAI metrics of every
/// [`TracingMiddleware`](crate::TracingMiddleware) built without an explicit provider, and the
/// OpenTelemetry global meter provider.
pub fn set_meter_provider(provider: SdkMeterProvider) {
    install(None, Some(provider));
}

/// Installs either or both providers; returns the generation that holds them.
pub(crate) fn install(tracer: Option<SdkTracerProvider>, meter: Option<SdkMeterProvider>) -> u64 {
    if let Some(p) = &tracer {
        opentelemetry::global::set_tracer_provider(p.clone());
    }
    if let Some(p) = &meter {
        opentelemetry::global::set_meter_provider(p.clone());
    }
    update(|slot| {
        if tracer.is_some() {
            slot.0 = tracer;
        }
        if meter.is_some() {
            slot.1 = meter;
        }
        true
    })
}

/// Removes the process-wide providers: middleware without explicit providers passes straight
/// through again. The OpenTelemetry global providers are left as they are. Does not shut the
/// providers down.
pub fn clear_providers() {
    update(|slot| {
        *slot = (None, None);
        true
    });
}

/// Clears the slot if nothing was installed since `generation`.
pub(crate) fn clear_if_current(generation: u64) {
    update(|slot| {
        let current = GENERATION.load(Ordering::Acquire) == generation;
        if current {
            *slot = (None, None);
        }
        current
    });
}

/// Whether a process-wide tracer or meter provider is installed, i.e. whether a
/// [`TracingMiddleware`](crate::TracingMiddleware) without explicit providers records anything.
pub fn tracing_installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}
