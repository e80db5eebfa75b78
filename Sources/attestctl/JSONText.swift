import GatewayRules

/// A JSON document built as a value, keys in insertion order (stable, readable output lines), written
/// by the project's one JSON writer (`GatewayRules.JSONWriter`: escaping, numbers, layout).
indirect enum JSONText {
    case string(String)
    case number(Double)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSONText])
    case object([(String, JSONText)])

    /// Compact JSON text.
    var rendered: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.text
    }

    /// Indented JSON text (two spaces, `"key": value`).
    func pretty() -> String {
        var writer = JSONWriter(capacity: 1024, pretty: true)
        writer.write(self)
        return writer.text
    }
}
