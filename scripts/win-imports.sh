#!/usr/bin/env bash
# Checks that a Windows executable imports only Windows's own DLLs (no libgcc_s,
# libwinpthread or libstdc++ of mingw's, which a Windows host does not have): its import
# table, read with Debian's mingw-w64 objdump. Prints the DLLs on one line.
#
# Usage: bash scripts/win-imports.sh FILE.exe
# scripts/cross.sh runs it on the release linerate.exe it builds; scripts/test.sh on the
# dev build that scripts/wine-test.sh runs (the same code and link flags, so the same DLLs).
set -euo pipefail
if [ $# != 1 ] || [ ! -f "$1" ]; then
    echo "usage: bash scripts/win-imports.sh FILE.exe  (a Windows executable that exists)" >&2
    exit 2
fi
objdump=x86_64-w64-mingw32-objdump
if ! command -v "$objdump" >/dev/null 2>&1; then
    echo "scripts/win-imports.sh: $objdump missing: apt-get install binutils-mingw-w64-x86-64" >&2
    exit 2
fi
dlls=$("$objdump" -p "$1" | awk '/DLL Name:/ {print $3}' | sort -fu)
if [ -z "$dlls" ]; then
    echo "scripts/win-imports.sh: $1 has no import table: not a Windows executable?" >&2
    exit 1
fi
# Windows's own: the system DLLs and the API sets (api-ms-win-*) they forward.
foreign=$(echo "$dlls" | grep -viE '^(kernel32|kernelbase|advapi32|ws2_32|iphlpapi|ntdll|bcrypt|bcryptprimitives|userenv|msvcrt|ucrtbase|user32|shell32|ole32|oleaut32|secur32|crypt32|api-ms-win-.*)\.dll$' || true)
if [ -n "$foreign" ]; then
    echo "scripts/win-imports.sh: $1 imports DLLs that are not Windows's own: $(echo $foreign)" >&2
    exit 1
fi
echo $dlls
