import GatewayRules

/// TLS towards an `https://` upstream (`upstreams.NAME.tls`): which CAs to trust, which name to
/// expect, and whether to check at all.
///
/// YAML: `tls: {ca: tls/internal-ca.pem, server_name: api.internal, verify: true}`, every key
/// optional. Present on every `https://` upstream (with the defaults when `tls` is not written) and
/// on no other: `tls` on an `http://` or `unix:` upstream is an error.
public struct UpstreamTLSConfiguration: Sendable, Hashable {
    /// Absolute path of a PEM bundle of CA certificates that the upstream's chain must lead to
    /// (`ca`; relative paths resolve against the configuration file's folder); nil: the system trust
    /// store. The configuration layer does not open it (see `LoadedConfiguration.tlsFiles`).
    public var ca: String?
    /// The name sent as SNI and matched against the upstream certificate (`server_name`; default: the
    /// URL's host, lower-cased). A DNS name, or an IP literal (IPv6 without brackets): then no SNI is
    /// sent (RFC 6066 allows names only) and the certificate must carry that IP address.
    public var serverName: String
    /// Whether the upstream's certificate chain and name are checked (`verify`; default true).
    /// `false` accepts any certificate: the configuration loads with a warning at
    /// `upstreams.NAME.tls.verify`, which check-config prints and the gateway logs at start.
    public var verify: Bool
    /// Whether `server_name` was written; when not, an upstream with several `https://` endpoints
    /// sends each endpoint's own host (and `serverName` is the first endpoint's).
    public var serverNameIsExplicit: Bool

    /// Creates the settings; `ca` defaults to the system store and `verify` to true.
    public init(ca: String? = nil, serverName: String, verify: Bool = true, serverNameIsExplicit: Bool = false) {
        self.ca = ca
        self.serverName = serverName
        self.verify = verify
        self.serverNameIsExplicit = serverNameIsExplicit
    }

    /// Whether `serverName` is an IP literal (no SNI; the certificate is matched on its IP address).
    public var serverNameIsIPAddress: Bool {
        NetworkSyntax.ipv4(serverName) != nil || NetworkSyntax.ipv6(serverName) != nil
    }
}
