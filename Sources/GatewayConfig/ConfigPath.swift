/// A key path inside the configuration document, rendered the way operators write it:
/// `routes[0].max_body`, `upstreams.legacy.url`, `listen[1]`.
struct ConfigPath: Sendable, Hashable, CustomStringConvertible {
    /// One step: a mapping key or a list index.
    enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    /// The steps from the document root.
    var components: [Component] = []

    /// The document root (renders as the empty string).
    static let root = ConfigPath()

    /// This path followed by mapping key `key`.
    func key(_ key: String) -> ConfigPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    /// This path followed by list index `index`.
    func index(_ index: Int) -> ConfigPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    /// `routes[0].max_body`.
    var description: String {
        var out = ""
        for component in components {
            switch component {
            case .key(let k):
                if !out.isEmpty { out += "." }
                out += k
            case .index(let i):
                out += "[\(i)]"
            }
        }
        return out
    }
}
