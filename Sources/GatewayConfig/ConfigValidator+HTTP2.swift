/// The `http2` section.
extension ConfigValidator {
    /// `http2`; `max_header_list_size` defaults to the validated `limits.max_header_bytes`.
    func http2(_ root: Fields, limits: LimitsConfiguration) -> HTTP2Configuration? {
        let defaults = HTTP2Configuration(maxHeaderListSize: limits.maxHeaderBytes)
        guard let node = root.node("http2") else { return defaults }
        guard let f = fields(node, root.path.key("http2"), .http2) else { return nil }
        let streams = optional(f, "max_concurrent_streams", default: defaults.maxConcurrentStreams) { integer($0, $1, 1...1000) }
        let window = optional(f, "initial_window_size", default: defaults.initialWindowSize) {
            size($0, $1, 1024...HTTP2Configuration.maximumWindowSize)
        }
        let headerList = optional(f, "max_header_list_size", default: defaults.maxHeaderListSize) { size($0, $1, 1024...(1 << 20)) }
        guard let streams, let window, let headerList else { return nil }
        return HTTP2Configuration(maxConcurrentStreams: streams, initialWindowSize: window, maxHeaderListSize: headerList)
    }
}
