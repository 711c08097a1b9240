/* hwmodels/roofline.h: a roofline model of a GPU from its datasheet, for
 * when no calibration table has been measured (`simbatch calibrate
 * --device=gpu` makes one when a GPU is at hand). It is a model, never a
 * measurement, and is named as such everywhere: `gpu-h100-roofline`. */
#ifndef SB_ROOFLINE_H
#define SB_ROOFLINE_H

#include "hwmodel.h"

extern const struct hw_ops roofline_h100_ops;

#endif
