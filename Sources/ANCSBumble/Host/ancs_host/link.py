"""link: virtual controllers on one virtual link, one HCI transport each."""
import asyncio
import contextlib
import sys

from bumble import core, hci, ll
from bumble.controller import Controller
from bumble.link import LocalLink
from bumble.transport import open_transport

from .common import emit, fail, log


class FixedLink(LocalLink):
    """Bumble's LocalLink tags an LE ACL packet with the sender controller's
    random address; a connection made from a public address then never gets
    its data. Tag it with the connection's own address instead."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport != core.PhysicalTransport.LE:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        connection = sender_controller.le_connections.get(destination_address)
        source = connection.self_address if connection else sender_controller.random_address
        destination = self.find_le_controller(destination_address)
        if destination is not None:
            asyncio.get_running_loop().call_soon(lambda: destination.on_link_acl_data(source, transport, data))


class BenchController(Controller):
    """A virtual controller whose host comes and goes, as on a test bench.
    Bumble's controller keeps its links when its host goes away or a new host
    resets it, so the next host can never connect to the same peer again
    ("Connection for ... already exists?"). Here a reset, or the host's
    transport closing, ends the controller's links (the peer's host hears a
    disconnection) and stops its advertising and scanning."""

    def drop_links(self, why):
        for connection in list(self.le_connections.values()):
            log.info('%s: %s, ending the link to %s', self.name, why, connection.peer_address)
            with contextlib.suppress(Exception):
                connection.send_ll_control_pdu(ll.TerminateInd(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR))
            self.le_connections.pop(connection.peer_address, None)
        self.le_legacy_advertiser.stop()
        for advertising_set in self.advertising_sets.values():
            advertising_set.stop()
        self.le_scan_enable = False
        self.pending_le_connection = None

    def on_hci_reset_command(self, command):
        self.drop_links('reset by its host')
        return super().on_hci_reset_command(command)


async def watch_hosts(controllers):
    """Ends the links of a controller whose TCP host has gone away."""
    connected = {}
    while True:
        for controller, transport in controllers:
            sink = transport.sink
            if not hasattr(sink, 'transport'):  # not a TCP server: no way to tell
                continue
            now = sink.transport is not None
            if connected.get(controller) and not now:
                controller.drop_links('its host went away')
            connected[controller] = now
        await asyncio.sleep(0.05)


async def run_link(args):
    link = FixedLink()
    controllers = []
    for index, spec in enumerate(args.hci):
        try:
            transport = await open_transport(spec)
        except Exception as error:  # noqa: BLE001
            fail(f'cannot open transport {spec}: {type(error).__name__}: {error}')
        controller = BenchController(f'C{index}', host_source=transport.source, host_sink=transport.sink, link=link,
                                     public_address=f'C0:DE:00:00:00:{index + 1:02X}')
        controllers.append((controller, transport))
    emit('ready', len(controllers))
    loop = asyncio.get_running_loop()
    watcher = loop.create_task(watch_hosts(controllers))
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.readline():  # runs until stdin closes
        pass
    watcher.cancel()
