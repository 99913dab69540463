import ANCS
import Logging

/// What the runtime logs about ANCS traffic. Notification text is private
/// (logs end up in bug reports and shared terminals): at any level, values appear only as their byte length
/// unless `logsContents` is set (`--log-contents`).
public struct ANCSTrafficLog: Sendable {
    public var logger: Logger
    public var logsContents: Bool

    public init(logger: Logger, logsContents: Bool = false) {
        self.logger = logger
        self.logsContents = logsContents
    }

    /// A value as it may appear in a log line.
    public func show(_ value: AttributeValue) -> String {
        logsContents ? "\"\(value.string)\"" : "<\(value.count) bytes>"
    }

    func attributes(_ attributes: [NotificationAttribute]) -> String {
        attributes.map { "\($0.id)=\(show($0.value))" }.joined(separator: " ")
    }

    /// One consumer event: a line at info for session changes, debug for the rest.
    public func log(_ event: ConsumerEvent) {
        switch event {
        case .sessionStarted:
            logger.info("session started")
        case .sessionEnded(let reason):
            logger.info("session ended: \(reason)")
        case .added(let n), .modified(let n), .removed(let n):
            logger.debug("notification \(n.uid) \(kind(event)): \(n.categoryID), count \(n.categoryCount), flags \(n.eventFlags)")
        case .unknownEvent(let e):
            logger.debug("notification \(e.notificationUID): reserved event \(e.eventID.rawValue)")
        case .attributes(let response):
            logger.debug("attributes of \(response.notificationUID): \(attributes(response.attributes))")
        case .appAttributes(let response):
            let values = response.attributes.map { "\($0.id)=\(show($0.value))" }.joined(separator: " ")
            logger.debug("app \(response.appIdentifier): \(values)")
        case .completed(let id, .success):
            logger.debug("request \(id) done")
        case .completed(let id, .failure(let error)):
            logger.notice("request \(id) failed: \(error)")
        case .protocolError(let error):
            logger.warning("dropped bytes from the phone: \(error)")
        case .dataSourceUnavailable(let result):
            logger.warning("Data Source unavailable (\(result)): nothing can be fetched")
        case .ready(let n, let appName), .updated(let n, let appName):
            logger.debug("notification \(n.uid) ready to show (app name \(appName.map(show) ?? "none"))")
        case .displayFailed(let uid, let error):
            logger.notice("notification \(uid) could not be fetched: \(error)")
        case .hidden(let uid):
            logger.debug("notification \(uid) hidden: not fetched (the configuration's filters)")
        case .health(let health):
            logger.notice("health: \(health.identifier)\(health.remedy.map { " (\($0))" } ?? "")")
        }
    }

    private func kind(_ event: ConsumerEvent) -> String {
        switch event {
        case .added: "added"
        case .modified: "modified"
        default: "removed"
        }
    }
}
