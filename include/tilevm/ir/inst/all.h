// Every instruction family, and the instruction table (inst_def.h).
#pragma once

#include "tilevm/ir/inst/async_copy.h"
#include "tilevm/ir/inst/control.h"
#include "tilevm/ir/inst/dot.h"
#include "tilevm/ir/inst/elementwise.h"
#include "tilevm/ir/inst/inst.h"
#include "tilevm/ir/inst/inst_def.h"
#include "tilevm/ir/inst/memory_global.h"
#include "tilevm/ir/inst/memory_shared.h"
#include "tilevm/ir/inst/reduce.h"
#include "tilevm/ir/inst/register_tensor.h"
#include "tilevm/ir/inst/tile.h"
#include "tilevm/ir/inst/tma.h"
