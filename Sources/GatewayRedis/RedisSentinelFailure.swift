/// No Sentinel named a primary: the master name and each Sentinel's problem.
struct RedisSentinelFailure: Error, CustomStringConvertible {
    /// The master name asked for.
    let master: String
    /// `host:port: problem` per Sentinel asked.
    let problems: [String]

    /// One line for the health log.
    var description: String {
        "no Sentinel named the primary of \"\(master)\": " + problems.joined(separator: "; ")
    }
}
