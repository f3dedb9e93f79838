/* A test fixture, never shipped: Wine 8.0 has no bcryptprimitives.dll, whose ProcessPrng
 * Rust's standard library imports on Windows since Rust 1.78 (its random numbers, e.g.
 * HashMap's keys). This DLL gives it ProcessPrng, forwarded to advapi32's RtlGenRandom
 * (SystemFunction036), which Wine has. scripts/wine-test.sh builds it with mingw-w64 and
 * puts it beside the .exe it runs. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
