/// Every key the configuration accepts, per mapping. The single source of truth for unknown-key
/// errors, "did you mean" suggestions, "this key belongs in ..." hints and the test that checks
/// Config/REFERENCE.md documents every key.
enum ConfigSchema {
    /// A kind of mapping in the document.
    enum Section: String, CaseIterable, Sendable {
        case root = "top level"
        case listener = "listen[]"
        case listenerTLS = "listen[].tls"
        case certificate = "listen[].tls.certificates[]"
        case admin = "admin"
        case store = "store"
        case storeTLS = "store.tls"
        case app = "apps[]"
        case risk = "apps[].risk"
        case trust = "trust"
        case endpoints = "endpoints"
        case rateLimit = "endpoints.rate_limit"
        case fleetAttestRate = "endpoints.fleet_attest_rate"
        case signals = "signals"
        case signalCategory = "signals.validation_category"
        case signalVersion = "signals.bundle_version"
        case headers = "headers"
        case evidence = "headers.evidence"
        case injected = "headers.injected"
        case upstream = "upstreams.NAME"
        case upstreamTLS = "upstreams.NAME.tls"
        case upstreamEjection = "upstreams.NAME.ejection"
        case upstreamHealthCheck = "upstreams.NAME.health_check"
        case route = "routes[]"
        case limits = "limits"
        case http2 = "http2"
        case timeouts = "timeouts"
        case log = "log"
        case verdictToken = "verdict_token"
    }

    /// Keys of each section, in documentation order.
    static func keys(_ section: Section) -> [String] {
        switch section {
        case .root: return ["listen", "admin", "tls", "trusted_proxies", "store", "apps", "trust", "endpoints", "headers", "upstreams", "routes", "limits", "http2", "timeouts", "log", "verdict_token"]
        case .listener: return ["address", "tls", "proxy_protocol"]
        case .listenerTLS: return ["certificates", "min_version"]
        case .certificate: return ["chain", "key"]
        case .admin: return ["address", "ready_requires_store"]
        case .store: return ["url", "username", "password", "password_file", "command_timeout", "connect_timeout", "wait_replicas", "tls"]
        case .storeTLS: return ["ca", "certificate", "key", "verify"]
        case .app: return ["app_id", "environment", "registration_ttl", "account_header", "account_key", "account_key_file",
                           "max_keys_per_account", "integrity_refuse", "integrity_lower", "signals", "verdict_token", "risk"]
        case .risk: return ["team_id", "key_id", "private_key_file", "data_server", "data_server_ca", "max_calls_per_second"]
        case .trust: return ["extra_roots", "extra_receipt_roots"]
        case .endpoints: return ["prefix", "challenge_ttl", "challenge_bytes", "rate_limit", "next_challenge", "fleet_attest_rate"]
        case .rateLimit: return ["requests_per_second", "burst"]
        case .fleetAttestRate: return ["count", "per"]
        case .signals: return ["validation_category", "bundle_version"]
        case .signalCategory: return ["allowed", "action"]
        case .signalVersion: return ["minimum", "action"]
        case .headers: return ["prefix", "evidence", "injected", "error"]
        case .evidence: return ["key_id", "challenge", "assertion", "client_data", "signature"]
        case .injected: return ["verdict", "reason", "key_id", "counter", "environment", "risk_metric", "validation_category", "bundle_version", "tier", "platform_attested", "integrity", "signal_policy", "cohort", "risk_age"]
        case .upstream: return ["url", "endpoints", "balance", "ejection", "dns_refresh", "health_check", "connect_timeout", "response_timeout", "max_idle_connections", "tls"]
        case .upstreamTLS: return ["ca", "server_name", "verify"]
        case .upstreamEjection: return ["consecutive_errors", "base_time", "max_time"]
        case .upstreamHealthCheck: return ["path", "interval", "timeout", "healthy_threshold", "unhealthy_threshold"]
        case .route: return ["name", "path_prefix", "path", "methods", "upstream", "mode", "max_body", "on_store_error", "counter_window", "environment", "bind_headers", "apps", "connect_timeout", "response_timeout", "min_tier", "signals", "enforce_percent", "missing_evidence", "max_risk_metric", "risk_action"]
        case .limits: return ["max_header_bytes", "max_headers", "max_connections"]
        case .http2: return ["max_concurrent_streams", "initial_window_size", "max_header_list_size"]
        case .timeouts: return ["header", "body", "idle", "drain", "tls_handshake"]
        case .log: return ["access", "format", "level"]
        case .verdictToken: return ["algorithm", "lifetime", "issuer", "key_files", "rotation", "publish_ahead", "store_key", "secret", "secret_file", "key_id"]
        }
    }

    /// Sections (other than `except`) where `key` is valid, for "belongs in" hints.
    static func sections(containing key: String, except: Section) -> [Section] {
        Section.allCases.filter { $0 != except && keys($0).contains(key) }
    }
}
