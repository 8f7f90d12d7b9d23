package images

import "strings"

// The GNOME profile (recipes whose Shell is ShellGNOME). Ubuntu 22.04
// runs GNOME Shell in its own session mode, "ubuntu": the Yaru shell
// theme and Ubuntu's dock as a mode extension, which the user cannot turn
// off. Debian's GNOME Shell reads session modes from
// /usr/share/gnome-shell/modes, so drums' layer writes Ubuntu's there,
// with Debian's dash-to-dock (which ubuntu-dock forks; configure.go's
// gnomeDefaults give it ubuntu-dock's look) in place of ubuntu-dock, and
// drums' extension: Ctrl+Alt+T, which in Ubuntu is gnome-settings-daemon's
// media-keys binding (an Ubuntu patch; a desktop runs no
// gnome-settings-daemon), and the line that says the shell is ready.

// GNOMESessionMode is GNOME Shell's session mode, as in Ubuntu.
const GNOMESessionMode = "ubuntu"

// GNOMEReadyLine is what drums' extension logs once GNOME Shell is
// ready for an agent: its startup animation is over (layout.js emits
// startup-complete, main.js logs "GNOME Shell started") and the dock has
// slid in, its strut in the work area. Before the first, a screenshot
// shows the startup background without the top bar, and the shell's
// cover pane swallows the pointer; before the second (a few hundred ms
// later here) there is no dock, and a window maximised then covers its
// place.
const GNOMEReadyLine = "drums: GNOME Shell ready"

// GNOMEEnv is what every process of a GNOME desktop runs with beyond the
// desktop's environment, as in the VM's session: GNOME Settings refuses to
// start unless XDG_CURRENT_DESKTOP names GNOME, and applications pick
// their integration by it.
var GNOMEEnv = []string{
	"XDG_CURRENT_DESKTOP=ubuntu:GNOME",
	"XDG_SESSION_DESKTOP=ubuntu",
	"DESKTOP_SESSION=ubuntu",
	"GNOME_SHELL_SESSION_MODE=" + GNOMESessionMode,
}

// drumsExtension is the UUID of drums' extension.
const drumsExtension = "drums@drums"

// gnomeMode is Ubuntu 22.04's session mode (its gnome-shell package's
// ubuntu.json) with Debian's dock and drums' extension.
const gnomeMode = `{
    "parentMode": "user",
    "stylesheetName": "Yaru/gnome-shell.css",
    "themeResourceName": "theme/Yaru/gnome-shell-theme.gresource",
    "enabledExtensions": ["dash-to-dock@micxgx.gmail.com", "` + drumsExtension + `"]
}
`

const drumsMetadata = `{
  "uuid": "` + drumsExtension + `",
  "name": "drums",
  "description": "Ctrl+Alt+T opens a terminal, as gnome-settings-daemon does in Ubuntu; says when the shell is ready",
  "shell-version": ["43"]
}
`

// drumsExtensionJS grabs Ctrl+Alt+T as GNOME Shell grabs
// gnome-settings-daemon's media keys (an accelerator, no settings schema)
// and launches @TERMINAL@ for it; and logs GNOMEReadyLine once the startup is
// complete and the dock (dash-to-dock's main dock, if any) is shown with
// the work area clear of it. Each strut change of the dock's slide-in
// emits workareas-changed; the last comes after the slide's end.
const drumsExtensionJS = `// drums: Ctrl+Alt+T opens a terminal, as Ubuntu's media keys do; the
// line that says the shell is ready.
const { Clutter, Gio, GLib, Meta, Shell } = imports.gi;
const Main = imports.ui.main;

const DOCK = 'dash-to-dock@micxgx.gmail.com';
const DOCK_SHOWN = 2; // dash-to-dock's State.SHOWN

let action = Meta.KeyBindingAction.NONE;
let handler = 0;
let readyIds = [];

function init() {
}

function ready() {
    if (Main.layoutManager._startingUp)
        return false;
    const dock = Main.extensionManager.lookup(DOCK)?.stateObj?.dockManager?.mainDock;
    if (!dock)
        return true;
    if (dock.getDockState() !== DOCK_SHOWN)
        return false;
    const box = dock.staticBox;
    const rect = new Meta.Rectangle({ x: box.x1, y: box.y1, width: box.get_width(), height: box.get_height() });
    const area = global.workspace_manager.get_active_workspace().get_work_area_for_monitor(dock.monitorIndex);
    return rect.width > 0 && !area.overlap(rect);
}

function stopWaiting() {
    if (readyIds.length === 0)
        return;
    Main.layoutManager.disconnect(readyIds[0]);
    global.display.disconnect(readyIds[1]);
    readyIds = [];
}

// The desktop's first XTEST key event moves the core keyboard to the XTEST
// device, whose keymap is not the one mutter loaded: mutter reloads its
// keymap and grabs every key binding again, and a shortcut pressed key by
// key meanwhile (pyautogui syncs after each key) is lost. A Shift press
// through a virtual keyboard (XTEST on X11) before the ready line makes
// that move then, not at the agent's first shortcut.
function warmKeyboard() {
    const seat = Clutter.get_default_backend().get_default_seat();
    const keyboard = seat.create_virtual_device(Clutter.InputDeviceType.KEYBOARD_DEVICE);
    const now = GLib.get_monotonic_time();
    keyboard.notify_keyval(now, Clutter.KEY_Shift_L, Clutter.KeyState.PRESSED);
    keyboard.notify_keyval(now, Clutter.KEY_Shift_L, Clutter.KeyState.RELEASED);
}

function announce() {
    if (readyIds.length === 0 || !ready())
        return;
    stopWaiting();
    warmKeyboard();
    log('` + GNOMEReadyLine + `');
}

function enable() {
    action = global.display.grab_accelerator('<Primary><Alt>t', Meta.KeyBindingFlags.IGNORE_AUTOREPEAT);
    Main.wm.allowKeybinding(Meta.external_binding_name_for_action(action),
        Shell.ActionMode.NORMAL | Shell.ActionMode.OVERVIEW);
    handler = global.display.connect('accelerator-activated', (display, activated, device, timestamp) => {
        if (activated !== action)
            return;
        // With the key's time, as gnome-settings-daemon launches it: the
        // terminal gets the focus (mutter's focus-stealing prevention keeps
        // it from a window launched without), and what is typed next goes
        // to it.
        const app = Gio.AppInfo.create_from_commandline(` + "`@TERMINAL@`" + `, null,
            Gio.AppInfoCreateFlags.SUPPORTS_STARTUP_NOTIFICATION);
        app.launch([], global.create_app_launch_context(timestamp, -1));
    });
    if (Main.layoutManager._startingUp) {
        readyIds = [Main.layoutManager.connect('startup-complete', announce),
            global.display.connect('workareas-changed', announce)];
    }
}

function disable() {
    stopWaiting();
    global.display.disconnect(handler);
    Main.wm.allowKeybinding(Meta.external_binding_name_for_action(action), Shell.ActionMode.NONE);
    global.display.ungrab_accelerator(action);
    action = Meta.KeyBindingAction.NONE;
}
`

// SystemctlEnv has the desktop's root reach its system manager over the
// system bus, as every other user does, and not over the manager's
// private socket, which refuses root: root's processes are outside the
// manager's PID namespace (sessions' addSystemManager). Root's processes
// that init starts get it from their environment, sudo's from
// sudoEnvFile. It is root's only: it would send the user's
// `systemctl --user` to the session bus, where the user manager is not.
const SystemctlEnv = "SYSTEMCTL_FORCE_BUS=1"

// sudoEnvFile is what sudo adds to the environment of what it runs as root.
const sudoEnvFile = "etc/drums/sudo-root.env"

// managerDropIn applies to every system service of a GNOME desktop: a
// desktop's services cannot have user namespaces of their own (the
// seccomp filter), and systemd fails a unit that asks for one rather than
// run it without, as it does for the other namespaces.
const managerDropIn = `# drums: a desktop's services cannot have user namespaces of their own.
[Service]
PrivateUsers=no
`

// tmpfilesDropIn has the boot's tmpfiles create what they list and remove
// nothing. The manager starts beside the desktop's stack, not before it,
// and the image's tmpfiles.d empty /tmp at boot (tmp.conf's D, x11.conf's
// D!): they removed the X server's socket and guestd's directory once the
// stack had made them. What a boot clears is a former boot's, and a
// desktop's /tmp and /run are new at every start.
const tmpfilesDropIn = `# drums: /tmp and /run are new at every start, and the desktop's own.
[Service]
ExecStart=
ExecStart=systemd-tmpfiles --create --boot --exclude-prefix=/dev
`

// writeGNOME writes the session mode and drums' extension, whose
// Ctrl+Alt+T runs terminal, and what the desktop's systemd needs: its
// drop-in for every service (managerDropIn) and for the boot's tmpfiles
// (tmpfilesDropIn), and SystemctlEnv for what sudo runs as root.
func (t tree) writeGNOME(terminal string) error {
	ext := "usr/share/gnome-shell/extensions/" + drumsExtension
	for _, f := range []struct{ path, data string }{
		{"usr/share/gnome-shell/modes/" + GNOMESessionMode + ".json", gnomeMode},
		{ext + "/metadata.json", drumsMetadata},
		{ext + "/extension.js", strings.ReplaceAll(drumsExtensionJS, "@TERMINAL@", terminal)},
		{sudoEnvFile, SystemctlEnv + "\n"},
		{"etc/systemd/system/service.d/drums.conf", managerDropIn},
		{"etc/systemd/system/systemd-tmpfiles-setup.service.d/drums.conf", tmpfilesDropIn},
	} {
		if err := t.writeFile(f.path, []byte(f.data), 0o644, 0, 0); err != nil {
			return err
		}
	}
	return t.writeFile("etc/sudoers.d/drums-systemctl", []byte("Defaults>root env_file=/"+sudoEnvFile+"\n"), 0o440, 0, 0)
}
