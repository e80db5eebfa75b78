#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Layer 3: the compiled route list, matched once per request.
///
/// Order is significant: `match` returns the **first** route, in configuration order, whose path match
/// and method list both accept the request (Envoy's rule: no longest-prefix or most-specific
/// reordering). A route whose `methods` do not include the request's method is skipped, so a POST-only
/// enforced route lets a GET fall through to the next route.
///
/// Path rules (on the normalized path; case-sensitive, byte for byte):
/// - `path_prefix P` takes `P` itself and anything under `P/` (segment boundary): `/v1/purchases`
///   takes `/v1/purchases` and `/v1/purchases/42`, not `/v1/purchasesX`; `/` takes every path.
/// - `path E` takes exactly `E`.
/// Matching reads bytes in place: no allocation, no String work, cost linear in the number of routes
/// times the length of the compared prefix. The gateway's own endpoints (`endpoints.prefix`) are
/// answered before the table is consulted.
public struct RouteTable: Sendable {
    /// A route that can never match because earlier routes take all of its requests.
    public struct Shadowing: Sendable, Hashable {
        /// Index of the unreachable route.
        public var route: Int
        /// Indexes of the earlier routes that take its requests.
        public var by: [Int]
    }

    private struct Span: Sendable {
        var start: Int
        var count: Int
    }

    private struct Entry: Sendable {
        var path: Span
        var isPrefix: Bool
        var isRoot: Bool
        /// Range in `methodSpans`; empty means every method.
        var methods: Span
    }

    /// The routes, in match order.
    public let routes: [RouteConfiguration]
    /// Path and method bytes of every route, back to back.
    private let storage: [UInt8]
    private let entries: [Entry]
    private let methodSpans: [Span]

    /// Compiles `routes` (already validated: normalized paths, upper-case method tokens).
    public init(routes: [RouteConfiguration]) {
        self.routes = routes
        var storage: [UInt8] = []
        var entries: [Entry] = []
        var methodSpans: [Span] = []
        for route in routes {
            let pathBytes = Array(route.match.path.utf8)
            let pathSpan = Span(start: storage.count, count: pathBytes.count)
            storage += pathBytes
            let firstMethod = methodSpans.count
            for method in route.methods {
                let bytes = Array(method.utf8)
                methodSpans.append(Span(start: storage.count, count: bytes.count))
                storage += bytes
            }
            var isPrefix = false
            if case .prefix = route.match { isPrefix = true }
            entries.append(Entry(path: pathSpan, isPrefix: isPrefix, isRoot: isPrefix && pathBytes == [UInt8(ascii: "/")],
                                 methods: Span(start: firstMethod, count: route.methods.count)))
        }
        self.storage = storage
        self.entries = entries
        self.methodSpans = methodSpans
    }

    /// Index in `routes` of the first route taking `method` and `path`, or nil (no route: 404).
    ///
    /// - Parameters:
    ///   - method: the method token exactly as on the request line (case-sensitive, RFC 9110 section 9.1).
    ///   - path: the normalized path; matching stops at a `?` so a full origin-form target also works.
    public func match(method: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> Int? {
        var pathCount = path.count
        if let q = path.firstIndex(of: UInt8(ascii: "?")) { pathCount = q }
        return storage.withUnsafeBufferPointer { store in
            entries.withUnsafeBufferPointer { entries in
                methodSpans.withUnsafeBufferPointer { methodSpans in
                    for index in 0..<entries.count {
                        let e = entries[index]
                        if !e.isRoot {
                            if e.isPrefix {
                                guard pathCount >= e.path.count else { continue }
                                if pathCount > e.path.count && path[e.path.count] != UInt8(ascii: "/") { continue }
                            } else {
                                guard pathCount == e.path.count else { continue }
                            }
                            if !Self.equal(store, e.path, path) { continue }
                        }
                        if e.methods.count == 0 { return index }
                        for m in e.methods.start..<(e.methods.start + e.methods.count) {
                            let span = methodSpans[m]
                            if span.count == method.count && Self.equal(store, span, method) { return index }
                        }
                    }
                    return nil
                }
            }
        }
    }

    /// `match(method:path:)` for String arguments (tests, tools; the proxy passes its bytes).
    public func match(method: String, path: String) -> Int? {
        var m = method, p = path
        return m.withUTF8 { mb in
            p.withUTF8 { pb in
                match(method: UnsafeRawBufferPointer(mb), path: UnsafeRawBufferPointer(pb))
            }
        }
    }

    /// The first route taking `method` and `path`, or nil.
    public func route(method: String, path: String) -> RouteConfiguration? {
        match(method: method, path: path).map { routes[$0] }
    }

    @inline(__always)
    private static func equal(_ store: UnsafeBufferPointer<UInt8>, _ span: Span, _ other: UnsafeRawBufferPointer) -> Bool {
        guard span.count > 0 else { return true }
        guard let a = store.baseAddress, let b = other.baseAddress else { return false }
        return memcmp(a + span.start, b, span.count) == 0  // span.count <= other.count, checked by the caller
    }

    /// Routes that can never match: every (method, path) they take is taken by earlier routes, whose
    /// paths cover this route's paths and whose methods, together, include all of this route's methods.
    public func shadowedRoutes() -> [Shadowing] {
        var result: [Shadowing] = []
        for j in routes.indices {
            let later = routes[j]
            var coveredMethods = Set<String>()
            var coversAny = false
            var by: [Int] = []
            for i in 0..<j where Self.pathCovers(routes[i].match, later.match) {
                let earlier = routes[i]
                if earlier.methods.isEmpty {
                    coversAny = true
                    by.append(i)
                    break
                }
                let useful = later.methods.isEmpty ? false : !Set(earlier.methods).isDisjoint(with: later.methods)
                if useful {
                    by.append(i)
                    coveredMethods.formUnion(earlier.methods)
                }
            }
            if coversAny, let last = by.last {
                result.append(Shadowing(route: j, by: [last]))
            } else if !later.methods.isEmpty && Set(later.methods).isSubset(of: coveredMethods) {
                result.append(Shadowing(route: j, by: by))
            }
        }
        return result
    }

    /// Whether every path `b` takes is also taken by `a`.
    static func pathCovers(_ a: RouteConfiguration.PathMatch, _ b: RouteConfiguration.PathMatch) -> Bool {
        switch (a, b) {
        case (.exact(let x), .exact(let y)): return x == y
        case (.exact, .prefix): return false
        case (.prefix(let p), .prefix(let q)), (.prefix(let p), .exact(let q)):
            return p == "/" || q == p || q.hasPrefix(p + "/")
        }
    }
}
