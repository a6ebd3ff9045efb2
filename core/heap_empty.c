// SPDX-License-Identifier: MIT
/*
 * The empty heap: a thread's default heap before its first allocation (core/heap.h). All zero
 * and never written, so its direct table holds NULL where a made heap's holds &page_empty.
 *
 * Why a file of its own: libsefer.so links it after the other objects (so-bss-last, Makefile),
 * so that its 7.5 KiB lie past the .bss variables every process writes, which then share
 * .data's last page; reading it maps the kernel's zero page, which counts for no process's RSS.
 * Until 2026-12-07 it was initialized data (the table set to &page_empty): every process had
 * libsefer.so's whole writable file mapping resident, 12 KiB (the kernel maps a file's cached
 * pages 64 KiB around a fault), where it now has the one page.
 */
#include "core/heap.h"

SEFER_INTERNAL struct heap sefer__heap_empty;
