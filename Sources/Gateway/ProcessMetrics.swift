#if canImport(Glibc)
import Glibc
#endif

/// The standard `process_*` metrics of Prometheus client libraries, read from `/proc` at scrape
/// time (Linux, proc(5)): `process_cpu_seconds_total` (user plus system CPU time),
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds` (the soft `RLIMIT_NOFILE`) and `process_start_time_seconds` (unix seconds).
/// A value that cannot be read is left out rather than reported as 0.
enum ProcessMetrics {
    /// The families in the text exposition format.
    static func prometheusText() -> String {
        var out = ""
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let stat = readFile("/proc/self/stat"), let fields = statFields(stat), fields.count > 21, ticks > 0 {
            // Fields after the command name, 0-based from `state` (field 3 of proc(5)).
            if let utime = Double(fields[11]), let stime = Double(fields[12]) {
                gauge(&out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
                      (utime + stime) / ticks)
            }
            if let vsize = Double(fields[20]) {
                gauge(&out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", vsize)
            }
            if let rss = Double(fields[21]), pageSize > 0 {
                gauge(&out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss * pageSize)
            }
            if let start = Double(fields[19]), let boot = bootTime {
                gauge(&out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
                      boot + start / ticks)
            }
        }
        if let open = openDescriptors() {
            gauge(&out, "process_open_fds", "gauge", "Number of open file descriptors.", Double(open))
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            gauge(&out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", Double(limit.rlim_cur))
        }
        return out
    }

    private static func gauge(_ out: inout String, _ name: String, _ type: String, _ help: String, _ value: Double) {
        out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
    }

    /// `/proc/self/stat` after the parenthesized command name (which may hold spaces), split on spaces.
    static func statFields(_ text: String) -> [Substring]? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }

    /// Boot time (unix seconds), from the `btime` line of `/proc/stat`; read once.
    private static let bootTime: Double? = {
        guard let text = readFile("/proc/stat") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingSpaces)
        }
        return nil
    }()

    /// Entries of `/proc/self/fd` (the directory's own descriptor not counted).
    private static func openDescriptors() -> Int? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in raw.first }
            if name != UInt8(ascii: ".") { count += 1 }
        }
        return max(0, count - 1)
    }

    /// A small file's text (procfs files report size 0, so read until the end).
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { bytes += buffer[0..<n] } else if n < 0 && errno == EINTR { continue } else { break }
            if bytes.count > 1 << 20 { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " || s.last == "\n" { s = s.dropLast() }
        return s
    }
}
