#!/usr/bin/python3
"""An accessory on the real bluetoothd whose pairing agent refuses Just Works
authorization (as ancs4linux's agent does) and accepts numeric comparison:
it registers itself as the default agent (DisplayYesNo), advertises the ANCS
solicitation, and prints one line per question it is asked:

    RequestConfirmation <device> <6-digit code> accepted
    RequestAuthorization <device> refused

usage: strict_agent.py   (runs until killed)
"""
import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

ANCS = '7905f431-b5ce-4e99-a40f-4b1e122d00d0'
AGENT_PATH = '/ancs/test/strict_agent'
ADVERTISEMENT_PATH = '/ancs/test/advertisement0'


def say(*fields):
    print(*fields, flush=True)


class Rejected(dbus.DBusException):
    _dbus_error_name = 'org.bluez.Error.Rejected'


class Agent(dbus.service.Object):
    @dbus.service.method('org.bluez.Agent1', in_signature='ou', out_signature='')
    def RequestConfirmation(self, device, passkey):
        say('RequestConfirmation', device, f'{int(passkey):06d}', 'accepted')

    @dbus.service.method('org.bluez.Agent1', in_signature='o', out_signature='')
    def RequestAuthorization(self, device):
        say('RequestAuthorization', device, 'refused')
        raise Rejected('Just Works refused')

    @dbus.service.method('org.bluez.Agent1', in_signature='os', out_signature='')
    def AuthorizeService(self, device, uuid):
        pass

    @dbus.service.method('org.bluez.Agent1', in_signature='', out_signature='')
    def Cancel(self):
        say('Cancel')

    @dbus.service.method('org.bluez.Agent1', in_signature='', out_signature='')
    def Release(self):
        pass


class Advertisement(dbus.service.Object):
    @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface):
        return {'Type': 'peripheral', 'SolicitUUIDs': dbus.Array([ANCS], signature='s'),
                'LocalName': 'strict agent', 'Includes': dbus.Array([], signature='s')}

    @dbus.service.method('org.bluez.LEAdvertisement1', in_signature='', out_signature='')
    def Release(self):
        pass


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
    adapter = next(path for path, interfaces in manager.GetManagedObjects().items() if 'org.bluez.Adapter1' in interfaces)
    properties = dbus.Interface(bus.get_object('org.bluez', adapter), 'org.freedesktop.DBus.Properties')
    properties.Set('org.bluez.Adapter1', 'Powered', dbus.Boolean(True))
    properties.Set('org.bluez.Adapter1', 'Pairable', dbus.Boolean(True))
    Agent(bus, AGENT_PATH)
    agents = dbus.Interface(bus.get_object('org.bluez', '/org/bluez'), 'org.bluez.AgentManager1')
    agents.RegisterAgent(AGENT_PATH, 'DisplayYesNo')
    agents.RequestDefaultAgent(AGENT_PATH)
    Advertisement(bus, ADVERTISEMENT_PATH)
    advertising = dbus.Interface(bus.get_object('org.bluez', adapter), 'org.bluez.LEAdvertisingManager1')
    loop = GLib.MainLoop()

    def failed(error):
        say('failed', error)
        loop.quit()
    # bluetoothd reads the advertisement's properties before it answers: call asynchronously.
    advertising.RegisterAdvertisement(ADVERTISEMENT_PATH, {}, reply_handler=lambda: say('ready', adapter), error_handler=failed)
    loop.run()


if __name__ == '__main__':
    main()
