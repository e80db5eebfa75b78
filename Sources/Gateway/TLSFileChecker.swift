import GatewayConfig
import GatewayIO
#if canImport(Glibc)
import Glibc
#endif

/// The certificate and CA files a configuration names, checked the way `check-config` reports
/// configuration problems: at the YAML path that named them (`listen[1].tls.certificates[0]:
/// ... (line 7, column 11)`). Plugs into `ConfigCheckReport.check(path:checkFiles:)`.
///
/// Listener certificates (`TLSCertificateCheck`): errors for an unreadable file, not PEM, no
/// certificate, an unusable key, a key that does not match the leaf, a chain out of order, an
/// expired or not yet valid certificate; warnings for a certificate expiring within 30 days and a
/// leaf without subjectAltName. Upstream CA bundles: an error when the bundle cannot be loaded as
/// trust anchors (what the running gateway would do with it). Verdict-token key files: an error
/// unless the file holds an unencrypted PEM P-256 private key. Root files (`trust.extra_roots`,
/// `trust.extra_receipt_roots`) and DeviceCheck keys (`apps[N].risk.private_key_file`): an error
/// unless they load the way the running gateway loads them (`GatewayTables.trustRoots(inFile:)`,
/// `DataServerToken.key(inFile:)`).
public enum TLSFileChecker {
    /// The problems of `reference`'s files at `now` (seconds since 1970, default the system clock).
    public static func check(_ reference: TLSFileReference, now: Int64 = Int64(time(nil))) -> [ConfigIssue] {
        switch reference.files {
        case .certificate(let pair):
            return TLSCertificateCheck.problems(chainPath: pair.chain, keyPath: pair.key, now: now).map { problem in
                reference.issue(problem.severity == .error ? .error : .warning, problem.description)
            }
        case .clientCertificate(let pair):
            do {
                var settings = TLSClientSettings()
                settings.clientCertificate = (pair.chain, pair.key)
                _ = try TLSClientContext(settings: settings)
                return []
            } catch {
                return [reference.issue(.error, "\(error)")]
            }
        case .signingKey(let path):
            return VerdictTokenSigner.keyFileProblem(path).map { [reference.issue(.error, $0)] } ?? []
        case .trustRoots(let path):
            do { _ = try GatewayTables.trustRoots(inFile: path) } catch { return [reference.issue(.error, error.description)] }
            return []
        case .deviceCheckKey(let path):
            do { _ = try DataServerToken.key(inFile: path) } catch { return [reference.issue(.error, error.description)] }
            return []
        case .certificateAuthorities(let path):
            do {
                _ = try TLSClientContext(settings: TLSClientSettings(caPath: path))
                return []
            } catch {
                // Most context errors already begin with the file's path (`TLSContextError`); name it once.
                let reason = "\(error)"
                return [reference.issue(.error, reason.hasPrefix(path) ? reason : "\(path): \(reason)")]
            }
        }
    }
}
